"""Content a handler returns: images, audio, embedded resources and resource links,
made from bytes or a file, and put in the wire form of the negotiated revision when
the answer is made.

A tool or a prompt may return one of these, or a list mixing them with strings (each
a text block), and a resource its contents (:meth:`Content.as_contents`)::

    @server.tool()
    async def chart() -> Image:
        return image(Path("chart.png"))

:func:`image` and :func:`audio` take the bytes (with their MIME type) or a path (the
type guessed from its name with :mod:`mimetypes` when not given); :func:`embedded_resource`
the contents of a resource (text or bytes); :func:`resource_link` a link to one.
A revision that lacks a type refuses it clearly (:class:`ContentUnsupported`): audio
exists from 2025-03-26 on, resource links from 2025-06-18 on. A function annotated to
return a type that none of its server's revisions has is refused when it is declared
(:func:`refuse_unsupported`).
"""

from __future__ import annotations

import base64
import mimetypes
import os
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = [
    "Audio",
    "Content",
    "ContentUnsupported",
    "EmbeddedResource",
    "Image",
    "ResourceLink",
    "audio",
    "content_block",
    "embedded_resource",
    "image",
    "refuse_unsupported",
    "resource_link",
]

#: The first revision with each content type that not every revision has.
_SINCE: Final = {"audio": "2025-03-26", "resource_link": "2025-06-18"}
#: The MIME type of bytes whose type cannot be guessed.
_OCTETS: Final = "application/octet-stream"


class ContentUnsupported(ValueError):
    """A content type the negotiated revision does not have: ``type`` (the block's),
    ``revision`` (the connection's) and ``needs`` (the first revision with it)."""

    def __init__(self, content_type: str, revision: str, needs: str) -> None:
        super().__init__(
            f"{content_type} content needs revision {needs} or later "
            f"(this connection speaks {revision})"
        )
        self.type = content_type
        self.revision = revision
        self.needs = needs


class Content:
    """A content block, turned into the wire form of a revision by :meth:`wire`."""

    __slots__ = ("annotations", "type")

    #: The wire ``type`` of the block.
    type: str

    def __init__(self, annotations: Mapping[str, Any] | None) -> None:
        self.annotations = dict(annotations) if annotations is not None else None

    def wire(self, revision: str) -> dict[str, Any]:
        """The block in the wire form of ``revision`` (:class:`ContentUnsupported` when
        the revision lacks its type)."""
        since = _SINCE.get(self.type)
        if since is not None and revision < since:
            raise ContentUnsupported(self.type, revision, since)
        out = self._fields()
        if self.annotations is not None:
            out["annotations"] = self.annotations
        return out

    def as_contents(self) -> dict[str, Any]:
        """The block as the contents of a resource (wire form, without ``uri`` unless
        it names one), the same in every revision: an image or audio is a blob with
        its MIME type, an embedded resource its ``resource``. A resource link has no
        contents (``TypeError``)."""
        raise TypeError(f"{self.type} content is no resource contents")

    def _fields(self) -> dict[str, Any]:
        raise NotImplementedError


class _Media(Content):
    __slots__ = ("data", "mime_type")

    def __init__(self, data: bytes, mime_type: str, annotations: Mapping[str, Any] | None) -> None:
        super().__init__(annotations)
        #: The raw bytes (base64 on the wire).
        self.data = data
        self.mime_type = mime_type

    def _fields(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "data": base64.b64encode(self.data).decode("ascii"),
            "mimeType": self.mime_type,
        }

    def as_contents(self) -> dict[str, Any]:
        fields = self._fields()
        return {"blob": fields["data"], "mimeType": self.mime_type}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.data)} bytes, {self.mime_type!r})"


class Image(_Media):
    """An image block (``type: "image"``), in every revision."""

    __slots__ = ()
    type = "image"


class Audio(_Media):
    """An audio block (``type: "audio"``), from 2025-03-26 on."""

    __slots__ = ()
    type = "audio"


class EmbeddedResource(Content):
    """The contents of a resource inside the answer (``type: "resource"``): ``text``
    or ``blob`` (bytes, base64 on the wire)."""

    __slots__ = ("contents", "mime_type", "uri")
    type = "resource"

    def __init__(
        self,
        uri: str,
        contents: str | bytes,
        mime_type: str | None,
        annotations: Mapping[str, Any] | None,
    ) -> None:
        super().__init__(annotations)
        self.uri = uri
        self.contents = contents
        self.mime_type = mime_type

    def _fields(self) -> dict[str, Any]:
        resource: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            resource["mimeType"] = self.mime_type
        if isinstance(self.contents, str):
            resource["text"] = self.contents
        else:
            resource["blob"] = base64.b64encode(self.contents).decode("ascii")
        return {"type": "resource", "resource": resource}

    def as_contents(self) -> dict[str, Any]:
        resource: dict[str, Any] = self._fields()["resource"]
        return resource


class ResourceLink(Content):
    """A link to a resource (``type: "resource_link"``), from 2025-06-18 on."""

    __slots__ = ("fields",)
    type = "resource_link"

    def __init__(self, fields: dict[str, Any], annotations: Mapping[str, Any] | None) -> None:
        super().__init__(annotations)
        #: ``uri``, ``name`` and the optional fields, in wire form.
        self.fields = fields

    def _fields(self) -> dict[str, Any]:
        return {"type": "resource_link", **self.fields}


def _read(source: bytes | str | os.PathLike[str], mime_type: str | None) -> tuple[bytes, str]:
    """The bytes of ``source`` (bytes, or a path to read) and their MIME type."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        if mime_type is None:
            raise TypeError("bytes need their mime_type (it is guessed from a path only)")
        return bytes(source), mime_type
    path = Path(source)
    return path.read_bytes(), mime_type or _guess(path)


def _guess(path: Path) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or _OCTETS


def image(
    source: bytes | str | os.PathLike[str],
    mime_type: str | None = None,
    *,
    annotations: Mapping[str, Any] | None = None,
) -> Image:
    """An image block from its bytes (``mime_type`` needed) or a file (read now, its
    type guessed from its name unless given)."""
    data, kind = _read(source, mime_type)
    return Image(data, kind, annotations)


def audio(
    source: bytes | str | os.PathLike[str],
    mime_type: str | None = None,
    *,
    annotations: Mapping[str, Any] | None = None,
) -> Audio:
    """An audio block (2025-03-26 on), as :func:`image`."""
    data, kind = _read(source, mime_type)
    return Audio(data, kind, annotations)


def embedded_resource(
    uri: str,
    contents: str | bytes | os.PathLike[str],
    mime_type: str | None = None,
    *,
    annotations: Mapping[str, Any] | None = None,
) -> EmbeddedResource:
    """The resource ``uri`` embedded with its ``contents``: text, bytes, or a file (read
    now, as bytes, its type guessed from its name unless given)."""
    if isinstance(contents, os.PathLike):
        path = Path(contents)
        return EmbeddedResource(uri, path.read_bytes(), mime_type or _guess(path), annotations)
    return EmbeddedResource(uri, contents, mime_type, annotations)


def resource_link(
    uri: str | os.PathLike[str],
    name: str | None = None,
    *,
    mime_type: str | None = None,
    title: str | None = None,
    description: str | None = None,
    size: int | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> ResourceLink:
    """A link to resource ``uri`` (2025-06-18 on). A path gives a ``file://`` URI, its
    file name as ``name``, its type guessed and its size (unless given)."""
    if isinstance(uri, os.PathLike):
        path = Path(uri).resolve()
        uri = path.as_uri()
        name = name if name is not None else path.name
        mime_type = mime_type or _guess(path)
        size = size if size is not None else path.stat().st_size
    if name is None:
        raise TypeError("a resource link needs a name (given, or the file's)")
    fields: dict[str, Any] = {"uri": uri, "name": name}
    for key, value in (
        ("title", title),
        ("description", description),
        ("mimeType", mime_type),
        ("size", size),
    ):
        if value is not None:
            fields[key] = value
    return ResourceLink(fields, annotations)


def content_block(value: str | Content, revision: str) -> dict[str, Any]:
    """One content block of ``revision`` (wire form): a string is a text block."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    return value.wire(revision)


def refuse_unsupported(
    fn: Callable[..., Any], revisions: Iterable[str] | None, what: str, *, resource: bool = False
) -> None:
    """Refuse (``TypeError``) a function whose return annotation names a content type
    it can never send: one that none of ``revisions`` (``None``: all of them) has, or,
    for a ``resource``, a resource link (no resource's contents). An annotation that
    cannot be resolved is taken on trust."""
    try:
        returned = typing.get_type_hints(fn).get("return")
    except Exception:  # a forward reference that does not resolve: nothing is known
        return
    newest = max(revisions, default=None) if revisions is not None else None
    for kind in _content_types(returned):
        if resource and kind is ResourceLink:
            raise TypeError(
                f"{what} returns a resource link, which is no resource contents "
                "(a resource returns text, bytes, an image, audio or an embedded resource)"
            )
        name = _type_of(kind)
        since = None if name is None else _SINCE.get(name)
        if resource or since is None or newest is None or newest >= since:
            continue
        raise TypeError(
            f"{what} returns {name} content, which needs revision {since} or later; "
            f"the server speaks {newest} at the newest"
        )


def _type_of(kind: type[Content]) -> str | None:
    """The wire ``type`` of the blocks of class ``kind`` (``None``: not one class's)."""
    for klass in kind.__mro__:
        value = vars(klass).get("type")
        if isinstance(value, str):  # not the slot of the base class
            return value
    return None


def _content_types(annotation: Any) -> Iterator[type[Content]]:
    """The :class:`Content` classes ``annotation`` names, inside unions and containers
    too."""
    if isinstance(annotation, type) and issubclass(annotation, Content):
        yield annotation
        return
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return
    for argument in typing.get_args(annotation):
        yield from _content_types(argument)
