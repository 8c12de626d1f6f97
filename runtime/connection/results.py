"""What :class:`~mcpspec.runtime.connection.Client` returns for ``tools/call`` and
``completion/complete``: the typed result as received, read without ``msgspec.UNSET``
(an absent optional field reads as its documented default)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

__all__ = ["Completions", "ToolFailed", "ToolResult"]


class ToolResult:
    """A ``tools/call`` result, read without ``msgspec.UNSET``: :attr:`is_error` is
    ``False`` and :attr:`structured` ``None`` when the server left them out. The result
    as received is :attr:`result`."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        #: The typed ``CallToolResult`` of the negotiated revision, as received.
        self.result = result

    @property
    def is_error(self) -> bool:
        """Whether the tool reported a failure (``isError``)."""
        return self.result.is_error is True

    @property
    def content(self) -> list[Any]:
        """The content blocks."""
        content: list[Any] = self.result.content
        return content

    @property
    def structured(self) -> Any:
        """The structured content (``structuredContent``), or ``None``."""
        value = getattr(self.result, "structured_content", UNSET)
        return None if value is UNSET else value

    @property
    def text(self) -> str:
        """The text of the text content blocks, one per line."""
        return "\n".join(
            block.text for block in self.result.content if getattr(block, "type", "") == "text"
        )

    @property
    def meta(self) -> dict[str, Any]:
        """The result's ``_meta`` (empty when absent)."""
        meta = self.result.meta
        return {} if meta is UNSET else dict(meta)

    def __repr__(self) -> str:
        return f"ToolResult(is_error={self.is_error}, content={self.content!r})"


class ToolFailed(Exception):
    """A tool called for a typed result (``call_tool(..., result_type=T)``) failed:
    its result has ``isError`` (:attr:`result`, a :class:`ToolResult`)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(f"the tool failed: {result.text}")
        #: The result as received.
        self.result = result


class Completions:
    """A ``completion/complete`` answer: :attr:`values`, :attr:`total` (``None`` when
    not given) and :attr:`has_more` (``False`` when not given)."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        #: The typed ``CompleteResult``, as received.
        self.result = result

    @property
    def values(self) -> list[str]:
        """The suggested values."""
        values: list[str] = self.result.completion.values
        return values

    @property
    def total(self) -> int | None:
        """How many values there are in all, if the server said."""
        total = self.result.completion.total
        return None if total is UNSET else int(total)

    @property
    def has_more(self) -> bool:
        """Whether there are more values than these."""
        return self.result.completion.has_more is True

    def __repr__(self) -> str:
        return f"Completions(values={self.values!r}, has_more={self.has_more})"
