"""The seeded mutation engine: from a valid seed to one attacker's input.

Everything draws from the ``random.Random`` it is given, so a generator seed and an
input index give the same bytes on every run (:meth:`Generator.input`).

Two families of edits:

- byte edits of the wire bytes: bit flips, inserted tokens (quotes, brackets, invalid
  UTF-8, a BOM), deleted or duplicated ranges, truncation, a splice of two messages;
- structure-aware edits of the decoded JSON: a value replaced by one of another type, a
  huge string or integer, deep nesting, invalid UTF-8 or lone surrogates inside a
  string, duplicate keys, a wrong or missing ``jsonrpc``/``id``/``method``, unknown
  methods, batches, odd ``_meta`` entries, progress tokens, cancellations and responses
  for ids nobody sent.

Values that JSON from ``json.dumps`` cannot hold (invalid UTF-8, duplicate keys, deep
nesting, integers of thousands of digits) go into the tree as placeholder strings and
are swapped for their raw bytes after serialisation.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcpspec

from .seeds import Row, Seed, Sender, corpus, issue_rows, nested

__all__ = ["FuzzInput", "Generator", "Profile"]

JSON = Any
Tree = Any


@dataclass(frozen=True)
class Profile:
    """How big the generated inputs may grow."""

    #: Most members of a generated batch.
    max_batch: int = 2_000
    #: Longest generated string, in characters.
    max_string: int = 20_000
    #: Deepest generated nesting.
    max_depth: int = 3_000
    #: Members of the issue's ``[1,1,...]`` batch row, and size of its long method name.
    row_batch: int = 2_000
    row_method: int = 100_000
    #: Largest generated input, in bytes (longer ones are cut: the issue rows excepted).
    max_bytes: int = 64 * 1024
    #: Share of inputs that are an issue row, unchanged.
    row_share: float = 0.03


@dataclass(frozen=True)
class FuzzInput:
    """One input: the bytes, the revision of its seed, its sender and how it was made."""

    data: bytes
    revision: str
    sender: Sender
    recipe: tuple[str, ...]

    def describe(self) -> str:
        """The recipe on one line."""
        return " + ".join(self.recipe)


#: Tokens inserted by the byte edits.
_TOKENS = (
    b'"',
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"null",
    b"1e999",
    b"-0",
    b"99999999999999999999999",
    b"\xef\xbb\xbf",
    b'"id":1,',
    b'"id":null,',
    b'"jsonrpc":"2.0",',
    b'"method":"ping",',
    b'"params":{},',
    b'"result":{},',
    b"NaN",
    b" \t\r\n",
)

#: Bytes that make a JSON string invalid UTF-8 (lone surrogates, overlong forms, ...).
_BAD_UTF8 = (
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xc0\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
)

#: Escapes that decode to lone surrogates or odd code points.
_ESCAPES = (b"\\ud800", b"\\udc00", b"\\udbff\\udbff", b"\\ud800\\u0041", b"\\u0000", b"\\uffff")

_META_KEYS = (
    "io.modelcontextprotocol/logLevel",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/serverInfo",
    "io.modelcontextprotocol/related-task",
    "progressToken",
)

#: Seeds above this size get byte edits only (decoding and walking them costs too much).
_STRUCTURAL = 16 * 1024

_KEYS = ("id", "jsonrpc", "method", "params", "result", "error", "_meta", "code", "message")


def _all_methods() -> tuple[str, ...]:
    methods: set[str] = set()
    for revision in mcpspec.REVISIONS:
        codec = mcpspec.codec(revision)
        for table in (codec.requests, codec.notifications):
            methods.update(table)
    return tuple(sorted(methods))


_METHODS = _all_methods()


@dataclass
class _Raw:
    """Raw bytes waiting to be spliced into the serialised tree."""

    parts: dict[str, bytes] = field(default_factory=dict)

    def hold(self, data: bytes) -> str:
        """A placeholder string that stands for ``data`` until :meth:`splice`."""
        key = f"@@raw{len(self.parts)}@@"
        self.parts[key] = data
        return key

    def splice(self, data: bytes) -> bytes:
        for key, raw in self.parts.items():
            data = data.replace(b'"' + key.encode() + b'"', raw)
        return data


class _Context:
    """What one structure-aware edit may use: the generator, the raw holder, the rng."""

    def __init__(self, gen: Generator, rng: random.Random, raw: _Raw) -> None:
        self.gen = gen
        self.rng = rng
        self.raw = raw
        self.profile = gen.profile

    def size(self, most: int) -> int:
        """A size up to ``most``, small ones likelier (log-uniform)."""
        return min(most, int(2 ** self.rng.uniform(0, max(1.0, most.bit_length()))))

    def huge_int(self) -> str:
        digits = self.rng.choice((4_300, 4_301, 5_000, 20_000))
        sign = self.rng.choice(("", "-"))
        return self.raw.hold((sign + "9" * digits).encode())

    def bad_string(self) -> str:
        rng = self.rng
        bad = rng.choice(_BAD_UTF8) if rng.random() < 0.7 else rng.choice(_ESCAPES)
        return self.raw.hold(b'"' + b"a" * rng.randrange(3) + bad + b"a" * rng.randrange(3) + b'"')

    def deep(self) -> str:
        depth = self.rng.choice((90, 500, 999, 1000, 1001, 2000, self.profile.max_depth))
        return self.raw.hold(nested(depth, kind=self.rng.choice(("array", "object"))))

    def long_string(self) -> str:
        char = self.rng.choice(("a", "'", '"', "\\", "\x00", "é", "\U0001f600", "\n"))
        return char * self.size(self.profile.max_string)

    def value(self) -> JSON:
        """A value of any type, often a hostile one."""
        rng = self.rng
        pick = rng.randrange(22)
        simple: tuple[JSON, ...] = (
            None,
            True,
            False,
            0,
            -1,
            1.5,
            2**63,
            -(2**63) - 1,
            2**64,
            "",
            [],
            {},
            float("nan"),
            float("inf"),
        )
        if pick < len(simple):
            return simple[pick]
        if pick == 14:
            return self.huge_int()
        if pick == 15:
            return self.bad_string()
        if pick == 16:
            return self.deep()
        if pick == 17:
            return self.long_string()
        if pick == 18:
            return [1] * self.size(64)
        if pick == 19:
            return {"a": {"b": [None, "x", 2]}}
        if pick == 20:
            return rng.choice(_METHODS)
        return self.gen.seed_tree(rng)


def _locations(tree: Tree) -> list[tuple[Any, Any]]:
    """Every (container, key) of the tree, the root excluded."""
    out: list[tuple[Any, Any]] = []
    stack = [tree]
    while stack and len(out) < 5_000:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                out.append((node, key))
                if isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                out.append((node, index))
                if isinstance(value, (dict, list)):
                    stack.append(value)
    return out


def _objects(tree: Tree) -> list[dict[str, Any]]:
    objects = [tree] if isinstance(tree, dict) else []
    objects += [c[k] for c, k in _locations(tree) if isinstance(c[k], dict)]
    return objects


def _top(tree: Tree, ctx: _Context) -> dict[str, Any]:
    """The message object an envelope edit works on (a batch's member, say)."""
    if isinstance(tree, dict):
        return tree
    if isinstance(tree, list):
        members = [m for m in tree if isinstance(m, dict)]
        if members:
            return ctx.rng.choice(members)
    return {}


# -- structure-aware edits: each changes the tree in place and returns the (new) root ----


def _replace_value(tree: Tree, ctx: _Context) -> Tree:
    places = _locations(tree)
    if not places:
        return ctx.value()
    container, key = ctx.rng.choice(places)
    container[key] = ctx.value()
    return tree


def _replace_string(tree: Tree, ctx: _Context) -> Tree:
    places = [(c, k) for c, k in _locations(tree) if isinstance(c[k], str)]
    if not places:
        return tree
    container, key = ctx.rng.choice(places)
    pick = ctx.rng.randrange(3)
    if pick == 0:
        container[key] = ctx.bad_string()
    elif pick == 1:
        container[key] = ctx.long_string()
    else:  # a lone surrogate: raw bytes or an escape, by how the tree is written
        container[key] = container[key][:3] + "\ud800" + container[key][3:]
    return tree


def _bad_key(tree: Tree, ctx: _Context) -> Tree:
    objects = _objects(tree)
    if objects:
        ctx.rng.choice(objects)[ctx.bad_string()] = 1
    return tree


def _delete_key(tree: Tree, ctx: _Context) -> Tree:
    objects = [o for o in _objects(tree) if o]
    if objects:
        obj = ctx.rng.choice(objects)
        del obj[ctx.rng.choice(list(obj))]
    return tree


def _add_key(tree: Tree, ctx: _Context) -> Tree:
    objects = _objects(tree)
    if objects:
        key = ctx.rng.choice((*_KEYS, *_META_KEYS, "xUnknown", ""))
        ctx.rng.choice(objects)[key] = ctx.value()
    return tree


def _duplicate_key(tree: Tree, ctx: _Context) -> Tree:
    objects = [o for o in _objects(tree) if o]
    if not objects:
        return tree
    obj = ctx.rng.choice(objects)
    key = ctx.rng.choice(list(obj))
    other = json.dumps(ctx.value() if ctx.rng.random() < 0.5 else obj[key])
    first = json.dumps(key).encode() + b":" + ctx.raw.splice(other.encode()) + b","
    body = ctx.raw.splice(json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    raw = ctx.raw.hold(b"{" + first + body[1:] if body != b"{}" else b"{" + first[:-1] + b"}")
    return _swap(tree, obj, raw)


def _swap(tree: Tree, old: Any, new: Any) -> Tree:
    """``tree`` with the node ``old`` (by identity) replaced by ``new``."""
    if tree is old:
        return new
    for container, key in _locations(tree):
        if container[key] is old:
            container[key] = new
            break
    return tree


def _deep(tree: Tree, ctx: _Context) -> Tree:
    places = _locations(tree)
    if not places or ctx.rng.random() < 0.2:
        return ctx.deep()
    container, key = ctx.rng.choice(places)
    container[key] = ctx.deep()
    return tree


def _huge_number(tree: Tree, ctx: _Context) -> Tree:
    places = [(c, k) for c, k in _locations(tree) if isinstance(c[k], (int, float))]
    places = places or _locations(tree)
    if places:
        container, key = ctx.rng.choice(places)
        container[key] = ctx.huge_int()
    return tree


def _envelope(tree: Tree, ctx: _Context) -> Tree:
    message = _top(tree, ctx)
    rng = ctx.rng
    key = rng.choice(("jsonrpc", "id", "method"))
    if rng.random() < 0.3:
        message.pop(key, None)
    elif key == "jsonrpc":
        message[key] = rng.choice(("1.0", "2.0 ", "", 2.0, 2, None, ["2.0"]))
    elif key == "id":
        message[key] = rng.choice((None, 1.5, True, [], {}, "", 0, -1, 2**63, "x" * 300))
    else:
        message[key] = ctx.value()
    return tree


def _method(tree: Tree, ctx: _Context) -> Tree:
    message = _top(tree, ctx)
    rng = ctx.rng
    pick = rng.randrange(4)
    if pick == 0:
        message["method"] = rng.choice(_METHODS)
    elif pick == 1:
        message["method"] = rng.choice(("no/such/method", "", "rpc.discover", "tools/call/"))
    elif pick == 2:
        message["method"] = ctx.long_string()
    else:
        message["method"] = rng.choice(_METHODS) + rng.choice(("\x00", "\ud800", " ", "/x"))
    return tree


def _meta(tree: Tree, ctx: _Context) -> Tree:
    message = _top(tree, ctx)
    params = message.get("params")
    if not isinstance(params, dict):
        params = message["params"] = {}
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        meta = params["_meta"] = {}
    rng = ctx.rng
    odd: tuple[JSON, ...] = ([], {}, 5, "nonsense", None, True, 1.5, ["debug"], {"a": 1}, "")
    meta[rng.choice(_META_KEYS)] = rng.choice(odd) if rng.random() < 0.8 else ctx.value()
    return tree


def _odd_token() -> tuple[JSON, ...]:
    return (None, True, 1.5, [], {}, "", -1, 0, 2**63, 2**64, "tok-1", 1, 2, "p1")


def _progress(tree: Tree, ctx: _Context) -> Tree:
    rng = ctx.rng
    params: dict[str, Any] = {
        "progressToken": rng.choice(_odd_token()),
        "progress": rng.choice((0, 1, -1, 1.5, 1e308, None, "1", float("nan"))),
    }
    if rng.random() < 0.5:
        params["total"] = rng.choice((0, 2, -1, None, "x", []))
    if rng.random() < 0.3:
        params["message"] = rng.choice((None, 5, "m", []))
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def _cancel(tree: Tree, ctx: _Context) -> Tree:
    rng = ctx.rng
    request_id = rng.choice((*_odd_token(), 10**9, "unknown", 3, 40))
    params: dict[str, Any] = {"requestId": request_id}
    if rng.random() < 0.5:
        params["reason"] = rng.choice((None, 5, "r", [], ctx.long_string()))
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def _response(tree: Tree, ctx: _Context) -> Tree:
    rng = ctx.rng
    request_id = rng.choice((*_odd_token(), 3, 10**9, "unknown", _top(tree, ctx).get("id", 1)))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    pick = rng.randrange(4)
    if pick == 0:
        message["result"] = rng.choice(({}, {"tools": []}, {"content": []}, [], None, 5))
    elif pick == 1:
        message["result"] = ctx.value()
    elif pick == 2:
        message["error"] = {
            "code": rng.choice((-32601, -32602, -32022, 0, 1.5, "x", None)),
            "message": rng.choice(("m", None, 5, ctx.long_string())),
        }
        if rng.random() < 0.5:
            message["error"]["data"] = ctx.value()
    else:
        message["result"] = {}
        message["error"] = {"code": -1, "message": "both"}
    return message


def _batch(tree: Tree, ctx: _Context) -> Tree:
    rng = ctx.rng
    count = ctx.size(ctx.profile.max_batch)
    pick = rng.randrange(4)
    if pick == 0:
        return [1] * count
    if pick == 1:  # as many copies as fit in the size limit
        size = len(json.dumps(tree)) + 1
        return [tree] * max(2, min(count, ctx.profile.max_bytes // size))
    if pick == 2:
        return rng.choice(([], [[]], [tree, []], [tree, 1, tree]))
    members = [ctx.gen.seed_tree(rng) for _ in range(min(count, 40))]
    return [tree, *members]


_EDITS: tuple[tuple[str, Callable[[Tree, _Context], Tree], int], ...] = (
    ("replace a value", _replace_value, 12),
    ("replace a string", _replace_string, 8),
    ("bad key", _bad_key, 2),
    ("delete a key", _delete_key, 5),
    ("add a key", _add_key, 5),
    ("duplicate a key", _duplicate_key, 3),
    ("deep nesting", _deep, 4),
    ("huge number", _huge_number, 3),
    ("envelope", _envelope, 8),
    ("method", _method, 6),
    ("odd _meta", _meta, 8),
    ("progress", _progress, 3),
    ("cancel", _cancel, 3),
    ("response", _response, 4),
    ("batch", _batch, 3),
)
_EDIT_WEIGHTS = [w for _, _, w in _EDITS]


# -- byte edits ----------------------------------------------------------------------------


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\xff"
    buf = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _set_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]


def _insert(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_TOKENS) + data[i:]


def _delete(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randrange(1, 16) :]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 64))
    return data[:j] + data[i:j] * rng.randrange(1, 4) + data[j:]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _frame(data: bytes, rng: random.Random) -> bytes:
    pick = rng.randrange(5)
    if pick == 0:
        return b"\xef\xbb\xbf" + data
    if pick == 1:
        return b" \r\n\t" + data + b"\n"
    if pick == 2:
        return data + rng.choice((b"x", b"{}", data, b"\x00", b","))
    if pick == 3:
        return data.replace(b":", b" : ", rng.randrange(1, 4))
    return data.upper() if rng.random() < 0.5 else data.lower()


_BYTE_EDITS: tuple[tuple[str, Callable[[bytes, random.Random], bytes], int], ...] = (
    ("flip bits", _flip, 4),
    ("set a byte", _set_byte, 3),
    ("insert a token", _insert, 6),
    ("delete bytes", _delete, 3),
    ("duplicate bytes", _duplicate, 2),
    ("truncate", _truncate, 2),
    ("frame", _frame, 2),
)
_BYTE_WEIGHTS = [w for _, _, w in _BYTE_EDITS]


class Generator:
    """Inputs from the seed corpus: ``input(index)`` is the same for the same seed."""

    def __init__(self, seed: int, profile: Profile | None = None) -> None:
        self.seed = seed
        self.profile = profile or Profile()
        self.seeds: tuple[Seed, ...] = corpus()
        self.small = tuple(s for s in self.seeds if not s.large)
        self.large = tuple(s for s in self.seeds if s.large)
        self.rows: list[Row] = issue_rows(
            batch_members=self.profile.row_batch, method_bytes=self.profile.row_method
        )
        self._by: dict[tuple[str | None, str | None], tuple[Seed, ...]] = {}

    def rng(self, index: int) -> random.Random:
        """The random source of input ``index``."""
        return random.Random(self.seed * 1_000_003 + index)

    def pool(self, revision: str | None, sender: str | None) -> tuple[Seed, ...]:
        """Small seeds of ``revision`` sent by ``sender`` (``None``: any)."""
        key = (revision, sender)
        found = self._by.get(key)
        if found is None:
            found = tuple(
                s
                for s in self.small
                if revision in (None, s.revision) and sender in (None, s.sender)
            )
            self._by[key] = found = found or self.small
        return found

    def seed_tree(self, rng: random.Random) -> Tree:
        """A fresh decoded copy of a random small seed."""
        return json.loads(rng.choice(self.small).data)

    def input(
        self, index: int, *, revision: str | None = None, sender: str | None = None
    ) -> FuzzInput:
        """Input ``index``: a mutated seed, preferably of ``revision`` sent by ``sender``."""
        rng = self.rng(index)
        roll = rng.random()
        rows = self.profile.row_share
        if roll < rows:
            row = rng.choice(self.rows)
            return FuzzInput(row.data, row.revision, "client", (f"issue row: {row.name}",))
        if roll < rows + 0.005 and self.large:
            seed = rng.choice(self.large)
        elif rng.random() < 0.15:
            seed = rng.choice(self.small)
        else:
            seed = rng.choice(self.pool(revision, sender))
        return self.mutate(seed, rng)

    def mutate(self, seed: Seed, rng: random.Random) -> FuzzInput:
        """``seed`` after one to three edits drawn from ``rng``."""
        recipe = [f"seed: {seed.origin} ({seed.revision}, from {seed.sender})"]
        data = seed.data
        edits = rng.choice((1, 1, 1, 2, 2, 3))
        # Structure-aware edits on seeds small enough to decode and walk cheaply.
        structural = len(data) <= _STRUCTURAL and rng.random() < 0.6
        if structural:
            tree = json.loads(data)
            raw = _Raw()
            ctx = _Context(self, rng, raw)
            for _ in range(edits):
                name, edit, _w = rng.choices(_EDITS, _EDIT_WEIGHTS)[0]
                tree = edit(tree, ctx)
                recipe.append(name)
            ascii_only = rng.random() < 0.5
            text = json.dumps(tree, ensure_ascii=ascii_only, separators=(",", ":"))
            data = raw.splice(text.encode("utf-8", "surrogatepass"))
            edits = 1 if rng.random() < 0.2 else 0
        for _ in range(edits):
            if rng.random() < 0.1:
                other = rng.choice(self.small).data
                cut = rng.randrange(len(data) + 1)
                data = data[:cut] + other[rng.randrange(len(other) + 1) :]
                recipe.append("splice")
                continue
            name, byte_edit, _w = rng.choices(_BYTE_EDITS, _BYTE_WEIGHTS)[0]
            data = byte_edit(data, rng)
            recipe.append(name)
        if len(data) > self.profile.max_bytes:
            data = data[: self.profile.max_bytes]
            recipe.append("cut to the size limit")
        return FuzzInput(data, seed.revision, seed.sender, tuple(recipe))
