"""The codec of one revision: bytes to typed messages and back, at msgspec speed.

Each generated revision module builds one :class:`Codec` from its dispatch tables. The
decoders are made on first use and kept.

``decode`` takes a fast path first: one msgspec pass into the tagged union of every
request and notification of the revision (chosen by ``method``), or into the response
envelope. Only input that fails the fast path is parsed a second time, generically, to
classify the failure: -32700 not JSON, -32600 not a JSON-RPC message, -32601 unknown
method, -32602 params that fail the schema, each with the JSON path and the reason.
"""

from __future__ import annotations

import _thread
import functools
import re
import sys
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, Union, cast, overload

import msgspec
from msgspec import UNSET

from .declared import ProtocolModel, UnionKind
from .envelope import (
    JSONRPC_VERSION,
    Envelope,
    ErrorResponse,
    ResultResponse,
    typed_response_type,
)
from .errors import ErrorCode, InvalidMessage, show
from .msgspec_errors import is_missing_field, path_and_reason
from .unparsed_response import response_id

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["DECODE_FAILURES", "MAX_BATCH_MEMBERS", "Codec", "Message", "envelope_decoder"]

T = TypeVar("T")

#: What ``Codec.decode`` returns for one message: a generated request or notification
#: Struct, or a response envelope.
Message: TypeAlias = "msgspec.Struct | ResultResponse | ErrorResponse"

#: An ``"id"`` member: notifications rarely hold one anywhere, so a hit is looked at closer.
_ID_MEMBER = re.compile(rb'"id"\s*:')
#: Below this size a message is tried as a request or notification first: a wrong guess
#: costs less than looking closer.
_SMALL = 512
#: Below this size a 2026-07-28 result union is decoded as the union first (see
#: ``Codec._decode_result_union``).
_SMALL_RESULT = 2048
#: What msgspec raises on input it refuses: not JSON or not the type
#: (``DecodeError``, ``ValidationError``), invalid UTF-8 inside a string
#: (``UnicodeDecodeError``; ``UnicodeEncodeError`` for ``str`` input holding a lone
#: surrogate), nesting deeper than the stack allows (``RecursionError``).
DECODE_FAILURES = (msgspec.DecodeError, UnicodeError, RecursionError)
#: The most members of a batch ``decode`` takes unless told otherwise.
MAX_BATCH_MEMBERS = 1024
_BOM = b"\xef\xbb\xbf"
#: How requests and notifications begin, as common encoders write them.
_MESSAGE_STARTS = (b'{"method"', b'{"jsonrpc":"2.0","method"', b'{"jsonrpc": "2.0", "method"')
#: How responses begin, as common encoders write them.
_RESPONSE_STARTS = (b'{"result"', b'{"error"', b'{"id"', b'{"jsonrpc":"2.0","result"')
#: ``{"jsonrpc":"2.0","id":<id>,"method"``: a request whose method follows its id.
_METHOD_AFTER_ID = re.compile(rb'\{"jsonrpc": ?"2\.0", ?"id": ?(?:-?\d+|"[^"\\]*"), ?"method"')


def _looks_like_message(data: bytes) -> bool:
    """Whether the first members say "request or notification" (a guess: a wrong one
    costs a pass, never a wrong result)."""
    return data.startswith(_MESSAGE_STARTS) or (
        not data.startswith(_RESPONSE_STARTS) and _METHOD_AFTER_ID.match(data) is not None
    )


class _Deferred:
    """A decoder built on first use: building one takes a millisecond or more (every
    message type of a revision, for the message union), which an import should not
    pay. On its first ``decode`` it builds the real decoder and puts it in its own place
    on the codec."""

    __slots__ = ("_build", "_name", "_owner")

    def __init__(
        self, owner: object, name: str, build: Callable[[], msgspec.json.Decoder[Any]]
    ) -> None:
        self._owner = owner
        self._name = name
        self._build = build

    def decode(self, data: bytes | str, /) -> Any:
        decoder = self._build()
        setattr(self._owner, self._name, decoder)
        return decoder.decode(data)


@functools.cache
def envelope_decoder() -> msgspec.json.Decoder[Any]:
    """The envelope decoder, the same for every revision: built once, on first use."""
    return msgspec.json.Decoder(Envelope)


#: A ``\uD800``-``\uDBFF`` escape not followed by the low half of its pair.
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)

#: A decoder for small data and one for large.
_ResponsePlan: TypeAlias = "tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]"

#: The tag of a 2026-07-28 result union, which a result from an older peer lacks.
_RESULT_TAG = "resultType"


def _not_json(exc: Exception, data: bytes | str | msgspec.Raw) -> str:
    """The reason text of a parse failure."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not JSON: a string is not valid UTF-8 ({exc.reason})"
    if isinstance(exc, UnicodeEncodeError):
        return "not JSON: the text holds a lone surrogate, which UTF-8 cannot encode"
    if not isinstance(data, str):
        if bytes(memoryview(data)[:3]) == _BOM:
            return "not JSON: a UTF-8 byte order mark before the message"
        # msgspec calls a high surrogate escape without its low half "truncated".
        lone = _LONE_SURROGATE.search(data) if "truncated" in str(exc) else None
        if lone is not None:
            escape = lone.group().decode("ascii")
            return (
                f"not JSON: a string holds the lone surrogate escape {escape} (byte {lone.start()})"
            )
    return f"not JSON: {exc}"


def _stack_depth() -> int:
    """How many frames the calling thread has on its stack."""
    depth = 0
    frame: Any = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


_STACK_LOCK = _thread.RLock()


def _on_whole_stack(decode: Callable[..., T], *args: Any, path: str = "$") -> T:
    """``decode(*args)`` again after it ran out of stack: with the recursion limit
    raised by the caller's own depth, so nesting that decodes on a fresh stack decodes
    here too, whatever the caller's depth. Deeper nesting is a parse error (-32700).

    msgspec decodes nested JSON recursively under the interpreter's recursion limit
    (on 3.10 and 3.11; from 3.12 on, under the C recursion limit, which Python frames
    do not use up). The limit is process-wide: it is raised under a lock and put back
    at once.
    """
    with _STACK_LOCK:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + _stack_depth())
        try:
            return decode(*args)
        except RecursionError:
            raise InvalidMessage(
                ErrorCode.PARSE_ERROR,
                path,
                f"nested deeper than the decoder takes (about {limit} levels)",
            ) from None
        finally:
            sys.setrecursionlimit(limit)


def _typed(
    decode: Callable[..., T], args: tuple[Any, ...], prefix: str, method: str | None = None
) -> T:
    """``decode(*args)``, the last of which is the JSON of one value at ``prefix``; what
    msgspec refuses becomes :class:`InvalidMessage`: -32602 for a value that is not of
    the type, -32700 for text that is not JSON."""
    try:
        try:
            return decode(*args)
        except RecursionError:
            return _on_whole_stack(decode, *args, path=prefix)
    except msgspec.ValidationError as exc:
        path, reason = path_and_reason(exc, prefix)
        raise InvalidMessage(ErrorCode.INVALID_PARAMS, path, reason, method=method) from None
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise InvalidMessage(ErrorCode.PARSE_ERROR, prefix, _not_json(exc, args[-1])) from None


class Codec:
    """Encoder and decoders of one MCP revision.

    Built by the generated revision module (``mcpspec.v2025_11_25.codec``); get one with
    ``mcpspec.codec("2025-11-25")``. Methods never raise anything but
    :class:`InvalidMessage` on bad input.
    """

    def __init__(
        self,
        revision: str,
        *,
        client_requests: Mapping[str, type[msgspec.Struct]],
        server_requests: Mapping[str, type[msgspec.Struct]],
        client_notifications: Mapping[str, type[msgspec.Struct]],
        server_notifications: Mapping[str, type[msgspec.Struct]],
        input_requests: Mapping[str, type[msgspec.Struct]],
        results: Mapping[str, Any],
        task_results: Mapping[str, Any],
        complete_results: Mapping[str, type[msgspec.Struct]],
        owned_unions: Mapping[str, tuple[Any, UnionKind]],
        batches: bool,
        error_id_required: bool,
        protocol_model: ProtocolModel,
    ) -> None:
        self.revision = revision
        #: How the revision negotiates (the module's ``PROTOCOL_MODEL``).
        self.protocol_model = protocol_model
        self.client_requests = client_requests
        self.server_requests = server_requests
        self.client_notifications = client_notifications
        self.server_notifications = server_notifications
        self.input_requests = input_requests
        self.results = results
        self.task_results = task_results
        #: method -> the complete member of its ``resultType``-tagged result union.
        self.complete_results = complete_results
        self.batches = batches
        self.error_id_required = error_id_required
        self.requests: dict[str, type[msgspec.Struct]] = {**client_requests, **server_requests}
        self.notifications: dict[str, type[msgspec.Struct]] = {
            **client_notifications,
            **server_notifications,
        }
        #: Unions the codec decodes itself, by name: (the type alias, its kind).
        self.owned_unions = owned_unions
        self._owned = {id(t): (name, kind) for name, (t, kind) in owned_unions.items()}
        self._decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
        self._result_decoders: dict[
            tuple[str, bool],
            tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any] | None],
        ] = {}
        self._message_decoder: msgspec.json.Decoder[Any] | _Deferred = _Deferred(
            self, "_message_decoder", self._build_message_decoder
        )
        self._envelope_decoder: msgspec.json.Decoder[Any] | _Deferred = _Deferred(
            self, "_envelope_decoder", envelope_decoder
        )
        #: Typed response decoders by method, for small and for large data.
        self._response_plans: dict[str, _ResponsePlan] = {}
        self._task_response_plans: dict[str, _ResponsePlan] = {}
        self._notification_types = frozenset(self.notifications.values())
        self._encoder = msgspec.json.Encoder()

    def __repr__(self) -> str:
        return f"<Codec {self.revision}>"

    # -- decoding messages ----------------------------------------------------------------

    def _build_message_decoder(self) -> msgspec.json.Decoder[Any]:
        types = tuple(dict.fromkeys([*self.requests.values(), *self.notifications.values()]))
        return msgspec.json.Decoder(Union[types])  # noqa: UP007 (a union built at run time)

    def decode(
        self, data: bytes | str, max_batch_members: int = MAX_BATCH_MEMBERS
    ) -> Message | list[Message | InvalidMessage]:
        """One wire message as a typed value.

        A request or notification comes back as its generated Struct (``.method``,
        ``.params``, and ``.id`` for requests), a response as :class:`ResultResponse`
        (``.result`` kept as ``msgspec.Raw``) or :class:`ErrorResponse`. A batch, where
        the revision allows one, comes back as a list in which a bad member is its
        :class:`InvalidMessage`, so one bad member loses nothing else; a batch of more
        than ``max_batch_members`` members is refused whole.

        Raises :class:`InvalidMessage` for anything else, and nothing else whatever
        the input: not JSON, invalid UTF-8 in a string, a UTF-8 byte order mark,
        integers of more than 4,300 digits (which Python will not convert) and nesting
        deeper than the interpreter's recursion limit (about 1,000 levels by default;
        the same at any depth of the caller's stack) are -32700. Of duplicate keys the
        last one wins.
        """
        # The hot path, kept to a handful of operations: a small message is tried as a
        # request or notification in one typed pass (a wrong guess costs less than
        # looking closer first).
        if len(data) < _SMALL:
            try:
                message = self._message_decoder.decode(data)
            except DECODE_FAILURES:
                return self._decode_slow(data, True, max_batch_members)
            # Returned as is unless ``jsonrpc`` was absent (see _checked_message) or a
            # notification may carry an ``"id"``.
            if message.jsonrpc is not JSONRPC_VERSION and (
                message.__class__ not in self._notification_types
                or (data.__class__ is bytes and _ID_MEMBER.search(data) is None)
            ):
                typed: Message = message
                return typed
            return self._checked_message(message, data)
        return self._decode_slow(data, False, max_batch_members)

    def _decode_slow(
        self, data: bytes | str, tried: bool, max_batch_members: int
    ) -> Message | list[Message | InvalidMessage]:
        """:meth:`_decode_other`, once more with the whole stack if it ran out. A message
        that does not parse but reads as a response names the request it answers
        (:func:`.unparsed_response.response_id`)."""
        try:
            try:
                return self._decode_other(data, tried, max_batch_members)
            except RecursionError:
                return _on_whole_stack(self._decode_other, data, tried, max_batch_members)
        except InvalidMessage as exc:
            if exc.code is ErrorCode.PARSE_ERROR and exc.id is None:
                raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
                request_id = response_id(raw)
                if request_id is not None:
                    exc.id = request_id
                    exc.response = True
                    exc.answerable = False  # a response is never answered
            raise

    def _decode_other(
        self, data: bytes | str, tried: bool, max_batch_members: int
    ) -> Message | list[Message | InvalidMessage]:
        """``decode`` of a large message, or of a small one that is no request or
        notification (``tried``): where the first members say "request or notification",
        one typed pass; otherwise one pass over the envelope (members skipped, not built)
        tells a response from a message; a response's result waits for
        ``decode_result``."""
        if isinstance(data, str):
            try:
                data = data.encode()
            except UnicodeEncodeError as exc:
                raise InvalidMessage(ErrorCode.PARSE_ERROR, "$", _not_json(exc, data)) from None
        if not tried and _looks_like_message(data):
            tried = True
            message = self._fast_message(data)
            if message is not None:
                return message
        try:
            envelope = self._envelope_decoder.decode(data)
        except DECODE_FAILURES:
            return self._classify(data, max_batch_members)
        if envelope.method is UNSET:
            response = self._checked_response(envelope)
            if response is not None:
                return response
        elif not tried:
            message = self._fast_message(data)
            if message is not None:
                return message
        return self._classify(data, max_batch_members)

    def _fast_message(self, data: bytes) -> Message | None:
        """A request or notification in one msgspec pass, or ``None`` to classify."""
        try:
            message = self._message_decoder.decode(data)
        except DECODE_FAILURES:
            return None
        checked = self._checked_message(message, data)
        return None if isinstance(checked, list) else checked

    def _checked_message(
        self, message: Any, data: bytes | str
    ) -> Message | list[Message | InvalidMessage]:
        """A decoded request or notification, or what the classifier makes of ``data``
        when the typed pass could not see what is wrong with it."""
        if isinstance(data, str):
            data = data.encode()  # it decoded: it holds no lone surrogate
        # ``jsonrpc`` fills itself in when absent, with an object of its own: the
        # classifier says what is wrong with a message that lacked it.
        if message.jsonrpc is JSONRPC_VERSION:
            return self._classify(data, MAX_BATCH_MEMBERS)
        # A notification method sent with an id is a request for an unknown method; the
        # classifier looks closer when "id" shows anywhere (rare in notifications).
        if message.__class__ in self._notification_types and _ID_MEMBER.search(data):
            return self._classify(data, MAX_BATCH_MEMBERS)
        typed: Message = message
        return typed

    def decode_response(
        self, data: bytes | str, method: str, *, task: bool = False
    ) -> Message | list[Message | InvalidMessage]:
        """A message expected to answer a ``method`` request, its result typed in the same
        pass: a :class:`ResultResponse` whose ``result`` is the method's result type (as
        :meth:`decode_result` gives it), or an :class:`ErrorResponse`. Anything else
        decodes as :meth:`decode` does. The caller checks the id against the request.
        """
        plan = (self._task_response_plans if task else self._response_plans).get(method)
        if plan is None:
            plan = self._response_plan(method, task)
        # ``plan[False]`` for small data, ``plan[True]`` for large (see _response_plan).
        try:
            r = plan[len(data) >= _SMALL_RESULT].decode(data)
        except DECODE_FAILURES:
            return self._undecoded_response(data, method, task)
        if (
            r.error is UNSET
            and r.method is UNSET
            and r.result is not UNSET
            and r.id is not None
            and r.id is not UNSET
        ):
            return ResultResponse(id=r.id, result=r.result)
        # An error response, or no response at all.
        checked = None if r.method is not UNSET else self._checked_response(r)
        return self.decode(data) if checked is None else checked

    def _response_plan(self, method: str, task: bool) -> _ResponsePlan:
        """The typed response decoders of ``method``: for small data, and for large.

        They differ for a 2026-07-28 result union tagged by ``resultType``: a small
        result decodes as the union (the tag is found cheaply wherever it sits), a large
        one as its complete member, as :meth:`_decode_result_union` explains.
        """
        result_type = self.result_type(method, task=task)
        union = msgspec.json.Decoder(typed_response_type(result_type))
        complete = self._complete_member(method, task)
        large = union if complete is None else msgspec.json.Decoder(typed_response_type(complete))
        plan = (union, large)
        (self._task_response_plans if task else self._response_plans)[method] = plan
        return plan

    def _undecoded_response(
        self, data: bytes | str, method: str, task: bool
    ) -> Message | list[Message | InvalidMessage]:
        """``decode_response`` of data the typed pass refused: whatever ``decode`` makes
        of it, a result typed by :meth:`decode_result` (which names what is wrong)."""
        message = self.decode(data)
        if isinstance(message, ResultResponse):
            message.result = self.decode_result(method, message.result, task=task)
        return message

    def _checked_response(self, r: Any) -> ResultResponse | ErrorResponse | None:
        if r.result is not UNSET and r.error is UNSET and r.id is not UNSET and r.id is not None:
            return ResultResponse(id=r.id, result=r.result)
        # From 2025-11-25 on an error response may leave out an id it does not know.
        if (
            r.error is not UNSET
            and r.result is UNSET
            and (r.id is not UNSET or not self.error_id_required)
        ):
            return ErrorResponse(id=r.id, error=r.error)
        return None

    def _classify(
        self, data: bytes, max_batch_members: int
    ) -> Message | list[Message | InvalidMessage]:
        """The slow path: say exactly what is wrong with ``data``, or decode what the fast
        path passed over (batches, members in an unusual order)."""
        try:
            obj = msgspec.json.decode(data)
        except (msgspec.DecodeError, UnicodeError) as exc:
            raise InvalidMessage(ErrorCode.PARSE_ERROR, "$", _not_json(exc, data)) from None
        if isinstance(obj, list):
            return self._batch(obj, max_batch_members)
        return self._classify_object(obj, data)

    def _batch(self, items: list[Any], max_members: int) -> list[Message | InvalidMessage]:
        """The members of a batch, each decoded once from its own bytes."""
        if not self.batches:
            raise InvalidMessage(
                ErrorCode.INVALID_REQUEST,
                "$",
                f"JSON-RPC batches are not allowed in revision {self.revision}",
            )
        if not items:
            raise InvalidMessage(ErrorCode.INVALID_REQUEST, "$", "a batch cannot be empty")
        if len(items) > max_members:
            raise InvalidMessage(
                ErrorCode.INVALID_REQUEST,
                "$",
                f"a batch of {len(items)} members is over the limit "
                f"max_batch_members={max_members}",
                limit="max_batch_members",
            )
        out: list[Message | InvalidMessage] = []
        for index, item in enumerate(items):
            raw = msgspec.json.encode(item)
            try:
                if not isinstance(item, dict):
                    raise InvalidMessage(
                        ErrorCode.INVALID_REQUEST, "$", "a batch member is a JSON object"
                    )
                out.append(self._classify_object(item, raw))
            except InvalidMessage as exc:
                exc.path = f"$[{index}]" + exc.path[1:]
                out.append(exc)
        return out

    def _classify_object(self, obj: Any, data: bytes) -> Message:
        if not isinstance(obj, dict):
            raise InvalidMessage(
                ErrorCode.INVALID_REQUEST, "$", "a JSON-RPC message is a JSON object"
            )
        has_id = "id" in obj
        request_id = obj.get("id")
        readable_id = (
            request_id
            if isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
            else None
        )
        method = obj.get("method")
        readable_method = method if isinstance(method, str) else None
        # Notifications and responses are never answered, even when refused.
        response = "method" not in obj
        answerable = not ("result" in obj or "error" in obj) if response else has_id

        def invalid(code: ErrorCode, path: str, reason: str) -> InvalidMessage:
            return InvalidMessage(
                code,
                path,
                reason,
                id=readable_id,
                method=readable_method,
                answerable=answerable,
                response=response,
            )

        if obj.get("jsonrpc") != "2.0":
            reason = "missing" if "jsonrpc" not in obj else f"is {show(obj['jsonrpc'])}"
            raise invalid(ErrorCode.INVALID_REQUEST, "$.jsonrpc", f'must be "2.0"; {reason}')
        if has_id and readable_id is None and not (request_id is None and "method" not in obj):
            what = "null" if request_id is None else type(request_id).__name__
            raise invalid(
                ErrorCode.INVALID_REQUEST,
                "$.id",
                f"a request id is a string or an integer, never {what}",
            )
        if "method" in obj:
            if readable_method is None:
                raise invalid(ErrorCode.INVALID_REQUEST, "$.method", "must be a string")
            return self._typed_message(obj, data, has_id, invalid)
        if "result" in obj or "error" in obj:
            return self._typed_response(obj, data, invalid)
        raise invalid(
            ErrorCode.INVALID_REQUEST, "$", "neither a request, a notification nor a response"
        )

    def _typed_message(self, obj: Any, data: bytes, has_id: bool, invalid: Any) -> Message:
        method = obj["method"]
        table, other = (
            (self.requests, self.notifications) if has_id else (self.notifications, self.requests)
        )
        message_type = table.get(method)
        if message_type is None:
            if method in other:
                kind = "notification" if has_id else "request"
                reason = f"{show(method)} is a {kind} method, so the message needs " + (
                    "no id" if has_id else "an id"
                )
                raise invalid(ErrorCode.METHOD_NOT_FOUND, "$.method", reason)
            raise invalid(
                ErrorCode.METHOD_NOT_FOUND,
                "$.method",
                f"unknown method {show(method)} in revision {self.revision}",
            )
        try:
            return cast(Message, self._decoder(message_type).decode(data))
        except msgspec.ValidationError as exc:
            path, reason = path_and_reason(exc)
            code = (
                ErrorCode.INVALID_PARAMS
                if path == "$.params" or path.startswith(("$.params.", "$.params["))
                else ErrorCode.INVALID_REQUEST
            )
            raise invalid(code, path, reason) from None

    def _typed_response(self, obj: Any, data: bytes, invalid: Any) -> Message:
        if "result" in obj and "error" in obj:
            raise invalid(
                ErrorCode.INVALID_REQUEST, "$", "a response has result or error, not both"
            )
        if "id" not in obj and ("result" in obj or self.error_id_required):
            raise invalid(ErrorCode.INVALID_REQUEST, "$.id", "a response needs the request's id")
        if "result" in obj and obj["id"] is None:
            raise invalid(ErrorCode.INVALID_REQUEST, "$.id", "a result's id is never null")
        try:
            response = self._envelope_decoder.decode(data)
        except msgspec.ValidationError as exc:
            raise invalid(ErrorCode.INVALID_REQUEST, *path_and_reason(exc)) from None
        checked = self._checked_response(response)
        assert checked is not None  # every other shape was rejected above
        return checked

    # -- decoding results and single types ------------------------------------------------

    def result_type(self, method: str, *, task: bool = False) -> Any:
        """The type a response to ``method`` decodes into (``CreateTaskResult`` for a
        task-augmented request when ``task``); ``KeyError`` for an unknown method."""
        table = self.task_results if task else self.results
        try:
            return table[method]
        except KeyError:
            raise KeyError(f"no result type for {method!r} in revision {self.revision}") from None

    def decode_result(
        self, method: str, result: msgspec.Raw | bytes | str, *, task: bool = False
    ) -> Any:
        """The result of a response to ``method``, typed.

        ``task=True`` for a task-augmented request (answered by ``CreateTaskResult``). In
        2026-07-28 a result without ``resultType``, from a peer of an earlier revision,
        reads as ``"complete"``. Raises :class:`InvalidMessage` (path under ``$.result``).
        """
        union, complete = self._result_decoders_for(method, task)
        if complete is None:
            return _typed(union.decode, (result,), "$.result", method)
        return _typed(self._decode_result_union, (union, complete, result), "$.result", method)

    @staticmethod
    def _decode_result_union(
        union: msgspec.json.Decoder[Any],
        complete: msgspec.json.Decoder[Any],
        result: msgspec.Raw | bytes | str,
    ) -> Any:
        """A 2026-07-28 result union (tagged by ``resultType``) or, without the tag, the
        complete result of an older peer; raises the error that says what is wrong.

        A small result is tried as the union first. A large one is tried as its complete
        member first: msgspec then need not look ahead for the union's tag, which can
        sit at the end of a large result.
        """
        if len(result) < _SMALL_RESULT:
            try:
                return union.decode(result)
            except msgspec.ValidationError as exc:
                if not is_missing_field(exc, _RESULT_TAG):
                    raise
            return complete.decode(result)
        try:
            return complete.decode(result)
        except msgspec.ValidationError as exc:
            error = exc
        try:
            return union.decode(result)
        except msgspec.ValidationError as exc:
            if is_missing_field(exc, _RESULT_TAG):
                raise error from None
            raise

    def _result_decoders_for(
        self, method: str, task: bool
    ) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any] | None]:
        """The decoder of the result type and, for a 2026-07-28 result union, that of its
        complete member (``None`` otherwise)."""
        plan = self._result_decoders.get((method, task))
        if plan is None:
            result_type = self.result_type(method, task=task)
            complete = self._complete_member(method, task)
            plan = (
                msgspec.json.Decoder(result_type),
                None if complete is None else msgspec.json.Decoder(complete),
            )
            self._result_decoders[(method, task)] = plan
        return plan

    def _complete_member(self, method: str, task: bool) -> type[msgspec.Struct] | None:
        """The complete member of ``method``'s result union tagged on ``resultType``, or
        ``None`` when its result is no such union (a task-augmented result never is)."""
        return None if task else self.complete_results.get(method)

    def _decoder(self, type_: Any) -> msgspec.json.Decoder[Any]:
        decoder = self._decoders.get(type_)
        if decoder is None:
            decoder = self._decoders[type_] = msgspec.json.Decoder(type_)
        return decoder

    @overload
    def decode_as(
        self, type_: type[T], data: bytes | str | msgspec.Raw, *, prefix: str = "$"
    ) -> T: ...
    @overload
    def decode_as(
        self, type_: Any, data: bytes | str | msgspec.Raw, *, prefix: str = "$"
    ) -> Any: ...
    def decode_as(self, type_: Any, data: bytes | str | msgspec.Raw, *, prefix: str = "$") -> Any:
        """One JSON instance of any generated type or alias of this revision.

        ``JSONRPCMessage`` and ``JSONRPCResponse`` decode as :meth:`decode` does. Result
        unions (``ServerResult``, ``ClientResult``, ``InputResponse``) depend on the method
        they answer: use :meth:`decode_result`. Raises :class:`InvalidMessage`.
        """
        owned = self._owned.get(id(type_))
        if owned is not None:
            name, kind = owned
            if kind is UnionKind.KEYED:
                raise TypeError(
                    f"{name} is decoded by the method of the request it answers: "
                    f"use codec.decode_result(method, data)"
                )
            message = self.decode(bytes(data) if isinstance(data, msgspec.Raw) else data)
            if kind is UnionKind.RESPONSE and not isinstance(
                message, (ResultResponse, ErrorResponse)
            ):
                raise InvalidMessage(ErrorCode.INVALID_REQUEST, "$", "not a response")
            return message
        return _typed(self._decoder(type_).decode, (data,), prefix)

    # -- encoding -------------------------------------------------------------------------

    def encode(self, value: Any) -> bytes:
        """The JSON bytes of a message, result or any generated value (a list for a
        batch). Optional fields left unset are omitted; constants are written."""
        return self._encoder.encode(value)
