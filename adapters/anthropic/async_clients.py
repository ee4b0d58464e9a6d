"""The async ports through the Anthropic SDK's `AsyncAnthropic` client, for asyncio hosts.

The same requests, replies, retries and error translation as `AnthropicChatModel` and
`AnthropicSummarizer` (see their modules); only the sending is awaited, on the host's event
loop, so no thread waits for the provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anthropic

from abridged.adapters.anthropic.calls import (
    COUNT_UNREADABLE,
    STREAM_UNREADABLE,
    AnthropicClientModel,
    StreamCheck,
    count_body,
    counted_tokens,
    destreamed_reply,
    is_json,
    read_reply,
    refuse_unsendable,
    split_body,
    translated_errors,
)
from abridged.adapters.anthropic.errors import MalformedResponseError
from abridged.adapters.anthropic.request import rendered
from abridged.adapters.anthropic.summarizer import ClientSummarizer, FailedModels
from abridged.application.ports import (
    ModelReply,
    ProviderError,
    RequestOptions,
    Summary,
    TextCallback,
)
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message

__all__ = ["AsyncAnthropicChatModel", "AsyncAnthropicSummarizer"]


class AsyncAnthropicChatModel(AnthropicClientModel[anthropic.AsyncAnthropic]):
    """The `AsyncChatModel` port: sends contexts through `anthropic.AsyncAnthropic`.

    `client` defaults to `anthropic.AsyncAnthropic()` (credentials and base URL from the
    environment), used with `max_retries` retries; `context_management` and `betas` as for
    `AnthropicChatModel`.
    """

    def _new_client(self, max_retries: int) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(max_retries=max_retries)

    async def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelReply:
        """Awaits what `AnthropicChatModel.send` sends (rendered for the capabilities the
        context carries)."""
        return await self.send_body(rendered(context, model, max_tokens, options), on_text=on_text)

    async def send_body(
        self, body: Mapping[str, JSON], *, on_text: TextCallback | None = None
    ) -> ModelReply:
        """Sends a complete `POST /v1/messages` body (streamed, collected into one reply);
        `on_text` receives its text as it streams. Raises `PromptTooLongError`,
        `ProviderError`."""
        required, rest = split_body(body, self._context_management)
        try:
            with translated_errors(STREAM_UNREADABLE):
                async with self._stream(required, rest) as stream:
                    if is_json(stream.response):
                        raw = await stream.response.aread()
                        return read_reply(destreamed_reply(raw, bool(self._betas)))
                    watch = StreamCheck(on_text)
                    async for event in stream:
                        watch.see(event)
                    watch.check()
                    message = await stream.get_final_message()
        except MalformedResponseError:
            refuse_unsendable(body)
            raise
        return read_reply(message)

    async def count_tokens(self, context: Context, *, model: str) -> int:
        """The API's count of the context's input tokens; raises `ProviderError`."""
        body, rest = count_body(context, model)
        with translated_errors(COUNT_UNREADABLE):
            counted = await self._client.messages.count_tokens(
                model=model, messages=body["messages"], extra_body=rest
            )
        return counted_tokens(counted)


class AsyncAnthropicSummarizer(ClientSummarizer[anthropic.AsyncAnthropic, AsyncAnthropicChatModel]):
    """The `AsyncSummarizer` port: `AnthropicSummarizer`'s requests, awaited through
    `anthropic.AsyncAnthropic` (the same model fallback and errors)."""

    def _chat_model(
        self, client: anthropic.AsyncAnthropic | None, max_retries: int
    ) -> AsyncAnthropicChatModel:
        return AsyncAnthropicChatModel(client, max_retries=max_retries)

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        earlier: Sequence[str] = (),
    ) -> Summary:
        """The model's summary of `messages` (and of the `earlier` summaries folded into it)
        in at most `max_tokens` tokens; raises `SummarizerError`."""
        text = self._request_text(messages, max_tokens, instructions, earlier)
        failed = FailedModels()
        for model in self._models(session_model):
            try:
                reply = await self._chat.send_body(self._body(model, text, max_tokens))
                return self._summary(reply)
            except ProviderError as error:
                failed.add(model, error)
        raise failed.error() from failed.last
