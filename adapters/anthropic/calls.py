"""What the synchronous and asynchronous Anthropic chat models share: their configuration, the
bodies they send, how they read the replies and counts, and how they translate failures.

`AnthropicChatModel` (on `anthropic.Anthropic`) and `AsyncAnthropicChatModel` (on
`anthropic.AsyncAnthropic`) differ only in sending: one calls the SDK, the other awaits it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import anthropic

from abridged.adapters.anthropic.errors import (
    SDK_ERRORS,
    MalformedResponseError,
    ReplyCutShortError,
    translate_error,
)
from abridged.adapters.anthropic.request import COUNT_TOKENS_FIELDS, render_request
from abridged.application.inputs import plain, reply_usage
from abridged.application.ports import ModelReply, ProviderError
from abridged.domain.context import Context
from abridged.domain.errors import InvalidMessageError, UnencodableContentError
from abridged.domain.messages import JSON, Message
from abridged.domain.reply_shapes import check_server_tool_pairs
from abridged.domain.usage import Usage

__all__ = [
    "CONTEXT_MANAGEMENT_BETA",
    "AnthropicClientModel",
    "ClientT",
    "StreamCheck",
    "checked_context_management",
    "chosen_betas",
    "count_body",
    "counted_tokens",
    "destreamed_reply",
    "is_json",
    "read_reply",
    "refuse_unsendable",
    "reply_from_message",
    "split_body",
    "translated_errors",
    "unsendable",
]

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The beta that enables provider-side context editing (`clear_tool_uses_20250919`,
`clear_thinking_20251015`)."""

_REQUIRED_FIELDS = ("model", "max_tokens", "messages")

_BLOCK_FIELDS: Mapping[str, tuple[str, ...]] = {
    "text": ("text",),
    "tool_use": ("id", "name", "input"),
    "thinking": ("thinking", "signature"),
    "redacted_thinking": ("data",),
}
"""The fields of each reply block a session keeps (and `citations` of a text, when it has
them); every other block type is kept whole, as the API's JSON."""

STREAM_UNREADABLE = "the Anthropic API answered with a response that cannot be read"
REPLY_UNREADABLE = "the Anthropic API's reply has an unexpected shape"
COUNT_UNREADABLE = "the Anthropic API's token count cannot be read"

ClientT = TypeVar("ClientT", anthropic.Anthropic, anthropic.AsyncAnthropic)
"""The SDK client a chat model sends through."""


class AnthropicClientModel(Generic[ClientT]):
    """A chat model's configuration, the same for either client: the client with its retries,
    the provider-side context management and the `anthropic-beta` values.

    `client` defaults to a new client of the model's kind (credentials and base URL from the
    environment); it is used with `max_retries` retries. `context_management` turns on
    provider-side context editing through the beta Messages API, with `betas` as the
    `anthropic-beta` header (by default the context-management beta).
    """

    def __init__(
        self,
        client: ClientT | None = None,
        *,
        max_retries: int = 2,
        context_management: Mapping[str, JSON] | None = None,
        betas: Sequence[str] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self._client: ClientT = (
            self._new_client(max_retries)
            if client is None
            else client.with_options(max_retries=max_retries)
        )
        self._context_management = checked_context_management(context_management)
        self._betas = chosen_betas(betas, self._context_management)

    def _new_client(self, max_retries: int) -> ClientT:
        """A client of this model's kind, configured from the environment."""
        raise NotImplementedError

    @property
    def name(self) -> str:
        """Always "anthropic"."""
        return "anthropic"

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """The provider-side context management added to every request, or None."""
        if self._context_management is None:
            return None
        return MappingProxyType(self._context_management)

    def _stream(self, required: Mapping[str, Any], rest: Mapping[str, Any]) -> Any:
        """The SDK's stream of one request, not yet entered (entering sends it): through the
        beta Messages API when there are betas to send."""
        needed: list[str] = [
            beta for beta in message_betas(required["messages"]) if beta not in self._betas
        ]
        betas: list[str] = [*self._betas, *needed]
        thinking = rest.get("thinking")
        if isinstance(thinking, Mapping) and "block_binding" in thinking:
            # The host chose what the API does with a thinking block whose prefix changed.
            betas += [beta for beta in (BLOCK_BINDING_BETA,) if beta not in betas]
        if betas:
            return self._client.beta.messages.stream(**required, betas=betas, extra_body=rest)
        return self._client.messages.stream(**required, extra_body=rest)


@contextmanager
def translated_errors(unreadable: str) -> Iterator[None]:
    """Around a call through the SDK: its exceptions become the provider errors
    `translate_error` gives, a provider error passes as it is, and any other exception (a body
    the SDK cannot read: truncated JSON, an empty body, text/plain, bad event data) becomes a
    `MalformedResponseError` that starts with `unreadable`."""
    try:
        yield
    except SDK_ERRORS as error:
        raise translate_error(error) from error
    except ProviderError:
        raise
    except Exception as error:
        raise MalformedResponseError(f"{unreadable}: {type(error).__name__}: {error}") from error


def read_reply(message: Any) -> ModelReply:
    """`reply_from_message`, with a reply of an unexpected shape as a `MalformedResponseError`."""
    with translated_errors(REPLY_UNREADABLE):
        return reply_from_message(message)


def counted_tokens(counted: Any) -> int:
    """The input tokens of the SDK's answer to `count_tokens`; raises `MalformedResponseError`
    when they are not a count."""
    with translated_errors(COUNT_UNREADABLE):
        tokens = int(counted.input_tokens)
    if tokens < 0:
        raise MalformedResponseError(f"the Anthropic API counted {tokens} tokens")
    return tokens


BLOCK_BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The beta a request needs to set `thinking.block_binding` (what the API does with a
thinking block whose prefix changed: `prefix_mismatch_behavior` "error" or "drop_block")."""


TOOL_CHANGE_BETAS = ("mid-conversation-tool-changes-2026-07-01", "inline-tools-2026-09-15")
"""What a request with tool changes in its system messages needs: the changes themselves,
and tools defined inline (`tool_definition`) rather than in `tools`."""


def message_betas(messages: Any) -> tuple[str, ...]:
    """The `anthropic-beta` values the messages themselves need (tool changes)."""
    for message in messages or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if message.get("role") == "system" and isinstance(content, list):
            kinds = {b.get("type") for b in content if isinstance(b, Mapping)}
            if kinds & {"tool_addition", "tool_removal"}:
                return TOOL_CHANGE_BETAS
    return ()


def chosen_betas(
    betas: Sequence[str] | None, context_management: Mapping[str, JSON] | None
) -> tuple[str, ...]:
    """The `anthropic-beta` values: those given, else the context-management beta when
    context management is on, else none."""
    if betas is not None:
        return tuple(betas)
    return (CONTEXT_MANAGEMENT_BETA,) if context_management is not None else ()


def split_body(
    body: Mapping[str, JSON], context_management: Mapping[str, JSON] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Messages body as the SDK's required keywords and the rest (its `extra_body`);
    raises `ValueError` when a required field is missing."""
    missing = [key for key in _REQUIRED_FIELDS if key not in body]
    if missing:
        raise ValueError(f"a Messages request body needs {', '.join(missing)}")
    # Replies are always streamed (see chat_model's docstring), whatever the body says.
    rest = {
        key: value for key, value in body.items() if key not in _REQUIRED_FIELDS and key != "stream"
    }
    if context_management is not None:
        rest["context_management"] = copy.deepcopy(dict(context_management))
    # The body is already in wire form: everything but the required fields goes through
    # `extra_body` as is, so a field this SDK release has no keyword for still gets sent.
    required: dict[str, Any] = {key: body[key] for key in _REQUIRED_FIELDS}
    return required, rest


def count_body(context: Context, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rendered request of `count_tokens` and the fields it sends beside `messages`."""
    # max_tokens is required to render and refused by count_tokens, so it goes again.
    body: dict[str, Any] = dict(render_request(context, model=model, max_tokens=1))
    rest = {
        key: value
        for key, value in body.items()
        if key in COUNT_TOKENS_FIELDS and key not in ("model", "messages")
    }
    return body, rest


def reply_from_message(message: Any) -> ModelReply:
    """A `ModelReply` from the SDK's `Message` (or `BetaMessage`); raises `ProviderError` when
    the reply holds a block a session cannot keep."""
    content = [_block_wire(block) for block in message.content]
    try:
        reply_message = Message.from_wire({"role": message.role, "content": content})
        # A reply may be empty (the summarizer says so); its server tools must pair.
        check_server_tool_pairs(reply_message)
    except InvalidMessageError as error:
        raise ProviderError(f"the model's reply could not be read: {error}") from error
    return ModelReply(
        message=reply_message,
        usage=reply_usage(message) or Usage(),
        model=str(message.model),
        stop_reason=message.stop_reason,
    )


def _block_wire(block: Any) -> JSON:
    kind = getattr(block, "type", None)
    fields = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        # Server tools and their results, and types not known yet: kept as the API sent them.
        return plain(block)
    wire: dict[str, JSON] = {"type": kind, **{field: getattr(block, field) for field in fields}}
    citations = getattr(block, "citations", None) if kind == "text" else None
    if citations:
        wire["citations"] = plain(citations)
    return wire


def checked_context_management(value: Mapping[str, JSON] | None) -> dict[str, JSON] | None:
    """A copy of `context_management` once checked: a mapping whose edits are context
    editing, not provider-side compaction; raises `TypeError` or `ValueError`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"context_management must be a mapping, got {type(value).__name__}")
    edits = value.get("edits", ())
    if not isinstance(edits, Sequence) or isinstance(edits, str):
        raise ValueError("context_management['edits'] must be a list of edits")
    for edit in edits:
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if isinstance(kind, str) and kind.startswith("compact"):
            # Provider-side compaction answers with a `compaction` block that every later
            # request must send back; a session's history has no place for it, and abridged
            # already compacts. Context editing (clearing old tool uses) is fine.
            raise ValueError(
                f"context_management edit {kind!r} is provider-side compaction, which abridged "
                "cannot combine with its own; use context editing (clear_tool_uses_20250919)"
            )
    return copy.deepcopy(dict(value))


CUT_SHORT = frozenset({"max_tokens", "model_context_window_exceeded"})
"""Stop reasons that mean the reply reached its output limit, wherever it was."""


class StreamCheck:
    """Watches a reply's stream event by event: relays its text, and at the end says whether it
    was a finished reply. A stream that closes without `message_stop` (a proxy or connection
    that ends the body cleanly half way) is not one, nor is a tool call whose streamed input
    is not complete JSON: the SDK would make them a reply cut short, or a call with `{}` as
    its input, recorded as if the model had said so."""

    def __init__(self, on_text: Any = None) -> None:
        self.on_text = on_text
        self.stopped = False
        self.stop_reason: str | None = None
        self.inputs: dict[int, list[str]] = {}

    def see(self, event: Any) -> None:
        """Takes one event of the SDK's stream."""
        kind = getattr(event, "type", None)
        if kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta" and self.on_text is not None:
                self.on_text(delta.text)
            elif delta.type == "input_json_delta":
                self.inputs.setdefault(event.index, []).append(delta.partial_json)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
        elif kind == "message_stop":
            self.stopped = True

    def check(self) -> None:
        """Raises `MalformedResponseError` unless the stream was a finished reply."""
        if not self.stopped:
            raise MalformedResponseError(
                f"{STREAM_UNREADABLE}: the stream ended before the reply was complete "
                "(no message_stop); nothing was recorded"
            )
        for index, pieces in self.inputs.items():
            text = "".join(pieces)
            try:
                value = json.loads(text) if text else {}
            except ValueError:
                value = None
            if not isinstance(value, dict) and self.stop_reason in CUT_SHORT:
                # Retrying would be cut the same way: the caller must raise `max_tokens`.
                raise ReplyCutShortError(
                    f"the reply reached its output limit (stop_reason {self.stop_reason!r}) in "
                    f"the input of tool call {index}: send the request again with a larger "
                    "max_tokens; nothing was recorded"
                )
            if not isinstance(value, dict):
                raise MalformedResponseError(
                    f"{STREAM_UNREADABLE}: the input of tool call {index} is not a complete "
                    f"JSON object ({text[:80]!r}); nothing was recorded"
                )


def destreamed_reply(raw: bytes, betas: bool) -> Any:
    """The SDK's message from a 200 `application/json` body: the reply of a proxy that waited
    for the whole stream and answered it as one JSON message. Raises `MalformedResponseError`
    when it is not a message."""
    try:
        data = json.loads(raw)
    except ValueError as error:
        raise MalformedResponseError(f"{STREAM_UNREADABLE}: {error}") from error
    if not isinstance(data, dict) or data.get("type") != "message":
        raise MalformedResponseError(
            f"{STREAM_UNREADABLE}: a 200 application/json body that is not a message"
        )
    with translated_errors(REPLY_UNREADABLE):
        if betas:
            from anthropic.types.beta import BetaMessage

            return BetaMessage.model_validate(data)
        return anthropic.types.Message.model_validate(data)


def is_json(response: Any) -> bool:
    """Whether a reply came as one JSON body instead of an event stream."""
    content_type = str(response.headers.get("content-type", ""))
    return content_type.split(";", maxsplit=1)[0].strip().lower() == "application/json"


def unsendable(body: Mapping[str, JSON]) -> UnencodableContentError | None:
    """The error of a request body JSON cannot carry (NaN, infinities: a session stored before
    they were refused at input), or `None`. Not a provider error: sending again cannot help."""
    try:
        json.dumps(body, allow_nan=False)
    except (TypeError, ValueError) as error:
        return UnencodableContentError(
            f"the request cannot be sent: the session holds a value JSON cannot carry ({error}); "
            "it was stored before such values were refused: start a new session from it "
            "(resume_session) without that message"
        )
    return None


def refuse_unsendable(body: Mapping[str, JSON]) -> None:
    """Raises the `unsendable` error of `body`, if it has one (from None: a reply that could
    not be read is not the cause); returns otherwise."""
    refused = unsendable(body)
    if refused is not None:
        raise refused from None
