"""The async ports through the Anthropic SDK's `AsyncAnthropic` client, for asyncio hosts.

The same requests, replies, retries and error translation as `AnthropicChatModel` and
`AnthropicSummarizer` (see their modules); only the sending is awaited, on the host's event
loop, so no thread waits for the provider.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anthropic

from abridged.adapters.anthropic.chat_model import (
    checked_context_management,
    chosen_betas,
    count_body,
    reply_from_message,
    split_body,
)
from abridged.adapters.anthropic.errors import SDK_ERRORS, translate_error
from abridged.adapters.anthropic.prompts import DEFAULT_PROMPT, SummaryPrompt
from abridged.adapters.anthropic.request import render_request
from abridged.adapters.anthropic.summarizer import (
    DEFAULT_MODEL,
    FALLBACK_ERRORS,
    MAX_SUMMARY_TOKENS,
    AnthropicSummaryRequests,
)
from abridged.application.ports import (
    ModelReply,
    ProviderError,
    RequestOptions,
    SummarizerError,
    Summary,
    TextCallback,
)
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message

__all__ = ["AsyncAnthropicChatModel", "AsyncAnthropicSummarizer"]


class AsyncAnthropicChatModel:
    """The `AsyncChatModel` port: sends contexts through `anthropic.AsyncAnthropic`.

    `client` defaults to `anthropic.AsyncAnthropic()` (credentials and base URL from the
    environment), used with `max_retries` retries; `context_management` and `betas` as for
    `AnthropicChatModel`.
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic | None = None,
        *,
        max_retries: int = 2,
        context_management: Mapping[str, JSON] | None = None,
        betas: Sequence[str] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self._client = (
            anthropic.AsyncAnthropic(max_retries=max_retries)
            if client is None
            else client.with_options(max_retries=max_retries)
        )
        self._context_management = checked_context_management(context_management)
        self._betas = chosen_betas(betas, self._context_management)

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

    async def send(
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
        body = render_request(context, model=model, max_tokens=max_tokens, options=options)
        return await self.send_body(body, on_text=on_text)

    async def send_body(
        self, body: Mapping[str, JSON], *, on_text: TextCallback | None = None
    ) -> ModelReply:
        """Sends a complete `POST /v1/messages` body (streamed, collected into one reply);
        `on_text` receives its text as it streams. Raises `PromptTooLongError`,
        `ProviderError`."""
        required, rest = split_body(body, self._context_management)
        try:
            if self._betas:
                async with self._client.beta.messages.stream(
                    **required, betas=list(self._betas), extra_body=rest
                ) as beta_stream:
                    await _relay(beta_stream.text_stream, on_text)
                    message: Any = await beta_stream.get_final_message()
            else:
                async with self._client.messages.stream(**required, extra_body=rest) as stream:
                    await _relay(stream.text_stream, on_text)
                    message = await stream.get_final_message()
        except SDK_ERRORS as error:
            raise translate_error(error) from error
        return reply_from_message(message)

    async def count_tokens(self, context: Context, *, model: str) -> int:
        """The API's count of the context's input tokens; raises `ProviderError`."""
        body, rest = count_body(context, model)
        try:
            counted = await self._client.messages.count_tokens(
                model=model, messages=body["messages"], extra_body=rest
            )
        except SDK_ERRORS as error:
            raise translate_error(error) from error
        return int(counted.input_tokens)


async def _relay(pieces: AsyncIterable[str], on_text: TextCallback | None) -> None:
    # Without a callback the stream is left to `get_final_message`, which reads it anyway.
    if on_text is None:
        return
    async for piece in pieces:
        on_text(piece)


class AsyncAnthropicSummarizer(AnthropicSummaryRequests):
    """The `AsyncSummarizer` port: `AnthropicSummarizer`'s requests, awaited through
    `anthropic.AsyncAnthropic` (the same model fallback and errors)."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic | None = None,
        *,
        model: str | None = DEFAULT_MODEL,
        fallback_to_session_model: bool = True,
        prompt: SummaryPrompt = DEFAULT_PROMPT,
        max_retries: int = 2,
        include_thinking: bool = False,
        max_summary_tokens: int = MAX_SUMMARY_TOKENS,
    ) -> None:
        super().__init__(
            model=model,
            fallback_to_session_model=fallback_to_session_model,
            prompt=prompt,
            include_thinking=include_thinking,
            max_summary_tokens=max_summary_tokens,
        )
        self._chat = AsyncAnthropicChatModel(client, max_retries=max_retries)

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """The model's summary of `messages` in at most `max_tokens` tokens; raises
        `SummarizerError`."""
        text = self._request_text(messages, max_tokens, instructions)
        failures: list[str] = []
        last_error: ProviderError | None = None
        for model in self._models(session_model):
            try:
                reply = await self._chat.send_body(self._body(model, text, max_tokens))
            except FALLBACK_ERRORS as error:
                failures.append(f"{model}: {error}")
                last_error = error
                continue
            except ProviderError as error:
                raise SummarizerError(f"summarizer model {model} failed: {error}") from error
            return self._summary(reply)
        raise SummarizerError("summarizer failed: " + "; then ".join(failures)) from last_error
