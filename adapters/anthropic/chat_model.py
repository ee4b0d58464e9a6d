"""The `ChatModel` port through the Anthropic Python SDK.

Replies are streamed and collected into one message: the SDK refuses a non-streamed request
whose `max_tokens` could take more than ten minutes to generate (about 21,000 tokens and up),
and agent sessions routinely reserve more output than that.

Retries are the SDK's own: 408, 409, 429 and every 5xx (529 overloaded included) are retried
with exponential backoff (0.5 s doubling up to 8 s, with jitter), `retry-after` and
`retry-after-ms` are obeyed, and `x-should-retry` overrides the status. A stream that fails
after it started is not retried: that surfaces as `ProviderUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Mapping

import anthropic

from abridged.adapters.anthropic.calls import (
    CONTEXT_MANAGEMENT_BETA,
    COUNT_UNREADABLE,
    STREAM_UNREADABLE,
    AnthropicClientModel,
    StreamCheck,
    checked_context_management,
    chosen_betas,
    count_body,
    counted_tokens,
    destreamed_reply,
    is_json,
    read_reply,
    refuse_unsendable,
    reply_from_message,
    split_body,
    translated_errors,
)
from abridged.adapters.anthropic.errors import MalformedResponseError
from abridged.adapters.anthropic.request import COUNT_TOKENS_FIELDS, rendered
from abridged.application.ports import ModelReply, RequestOptions, TextCallback
from abridged.domain.context import Context
from abridged.domain.messages import JSON

__all__ = [
    "CONTEXT_MANAGEMENT_BETA",
    "COUNT_TOKENS_FIELDS",
    "AnthropicChatModel",
    "checked_context_management",
    "chosen_betas",
    "count_body",
    "reply_from_message",
    "split_body",
]


class AnthropicChatModel(AnthropicClientModel[anthropic.Anthropic]):
    """Sends contexts to the Anthropic Messages API and counts their tokens there.

    `client` defaults to `anthropic.Anthropic()` (credentials and base URL from the
    environment); it is used with `max_retries` retries. `context_management` turns on
    provider-side context editing through the beta Messages API, with `betas` as the
    `anthropic-beta` header (by default the context-management beta).
    """

    def _new_client(self, max_retries: int) -> anthropic.Anthropic:
        return anthropic.Anthropic(max_retries=max_retries)

    def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelReply:
        """Sends the context as one request with `options`; `on_text` receives the reply's
        text as it streams. Raises `PromptTooLongError`, `ProviderError`."""
        return self.send_body(rendered(context, model, max_tokens, options), on_text=on_text)

    def send_body(
        self, body: Mapping[str, JSON], *, on_text: TextCallback | None = None
    ) -> ModelReply:
        """Sends a complete `POST /v1/messages` body (with this adapter's context management)
        and returns the reply; `on_text` receives its text as it streams. Raises
        `PromptTooLongError`, `ProviderError`."""
        required, rest = split_body(body, self._context_management)
        try:
            with translated_errors(STREAM_UNREADABLE), self._stream(required, rest) as stream:
                if is_json(stream.response):
                    return read_reply(destreamed_reply(stream.response.read(), bool(self._betas)))
                watch = StreamCheck(on_text)
                for event in stream:
                    watch.see(event)
                watch.check()
                message = stream.get_final_message()
        except MalformedResponseError:
            refuse_unsendable(body)
            raise
        return read_reply(message)

    def count_tokens(self, context: Context, *, model: str) -> int:
        """The API's count of the context's input tokens (as rendered, before any
        provider-side context editing); raises `ProviderError`."""
        body, rest = count_body(context, model)
        with translated_errors(COUNT_UNREADABLE):
            counted = self._client.messages.count_tokens(
                model=model, messages=body["messages"], extra_body=rest
            )
        return counted_tokens(counted)
