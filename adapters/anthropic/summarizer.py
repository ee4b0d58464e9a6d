"""The `Summarizer` port through an Anthropic model (by default a small, fast one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

import anthropic

from abridged.adapters.anthropic.calls import ClientT
from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.adapters.anthropic.errors import ModelNotFoundError
from abridged.adapters.anthropic.prompts import DEFAULT_PROMPT, SummaryPrompt, summary_request_text
from abridged.application.ports import (
    MIN_SUMMARY_TOKENS,
    ModelReply,
    PromptTooLongError,
    ProviderError,
    ProviderUnavailableError,
    SummarizerError,
    Summary,
)
from abridged.domain.messages import JSON, Message

__all__ = [
    "DEFAULT_MODEL",
    "FALLBACK_ERRORS",
    "MAX_SUMMARY_TOKENS",
    "AnthropicSummarizer",
    "AnthropicSummaryRequests",
    "ClientSummarizer",
    "FailedModels",
    "SummaryRefusedError",
]

DEFAULT_MODEL = "claude-haiku-4-5"

MAX_SUMMARY_TOKENS = 32_000
"""The most a summary is asked to take, whatever room it is given: every current model can
write this much in one reply, and a longer text no longer summarizes anything."""


class SummaryRefusedError(ProviderError):
    """The model declined to write the summary (`stop_reason: "refusal"`): what it wrote
    before it stopped is no summary, and another model may answer."""


FALLBACK_ERRORS = (
    ProviderUnavailableError,
    ModelNotFoundError,
    PromptTooLongError,
    SummaryRefusedError,
)
"""Failures the session's model may not share: the summarizer model is down or unknown, its
window is smaller than the one that held the conversation, or it declined the request."""


class AnthropicSummaryRequests:
    """What an Anthropic summarizer asks, of which models, and how it reads the answer;
    `AnthropicSummarizer` sends the requests, `AsyncAnthropicSummarizer` awaits them."""

    def __init__(
        self,
        *,
        model: str | None = DEFAULT_MODEL,
        fallback_to_session_model: bool = True,
        prompt: SummaryPrompt = DEFAULT_PROMPT,
        include_thinking: bool = False,
        max_summary_tokens: int = MAX_SUMMARY_TOKENS,
    ) -> None:
        if model is not None and not model.strip():
            raise ValueError("model must be a model name, or None for the session's model")
        if max_summary_tokens < MIN_SUMMARY_TOKENS:
            raise ValueError(f"max_summary_tokens must be at least {MIN_SUMMARY_TOKENS}")
        self.model = model
        self.fallback_to_session_model = fallback_to_session_model
        self.prompt = prompt
        self.include_thinking = include_thinking
        self.max_summary_tokens = max_summary_tokens

    @property
    def name(self) -> str:
        """The adapter and its model, e.g. `anthropic:claude-haiku-4-5`
        (`anthropic:session-model` when it summarizes with the session's model)."""
        return f"anthropic:{self.model or 'session-model'}"

    def _request_text(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        instructions: str | None,
        earlier: Sequence[str] = (),
    ) -> str:
        if not messages and not earlier:
            raise SummarizerError("nothing to summarize: no messages were given")
        if max_tokens < MIN_SUMMARY_TOKENS:
            raise SummarizerError(
                f"max_tokens={max_tokens} is too small; a summary needs at least "
                f"{MIN_SUMMARY_TOKENS} tokens"
            )
        return summary_request_text(
            messages,
            self.prompt,
            instructions=instructions,
            include_thinking=self.include_thinking,
            earlier=earlier,
        )

    def _models(self, session_model: str | None) -> list[str]:
        if self.model is None:
            if not session_model:
                raise SummarizerError(
                    "no summarizer model: none was configured and no session model was given"
                )
            return [session_model]
        models = [self.model]
        if self.fallback_to_session_model and session_model and session_model != self.model:
            models.append(session_model)
        return models

    def _body(self, model: str, text: str, max_tokens: int) -> dict[str, JSON]:
        return {
            "model": model,
            "max_tokens": min(max_tokens, self.max_summary_tokens),
            "system": self.prompt.system,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        }

    def _summary(self, reply: ModelReply) -> Summary:
        """The reply as a summary; raises `SummaryRefusedError` for a refusal (the next model
        may answer) and `SummarizerError` for a reply with no text."""
        if reply.stop_reason == "refusal":
            raise SummaryRefusedError(
                f"summarizer model {reply.model} declined to write the summary "
                "(stop reason refusal)"
            )
        text = reply.message.text.strip()
        if not text:
            raise SummarizerError(
                f"summarizer model {reply.model} wrote no text (stop reason {reply.stop_reason})"
            )
        return Summary(
            text=text,
            model=reply.model,
            input_tokens=reply.usage.prompt_tokens,
            output_tokens=reply.usage.output_tokens,
        )


ChatT = TypeVar("ChatT")


class ClientSummarizer(AnthropicSummaryRequests, Generic[ClientT, ChatT]):
    """`AnthropicSummaryRequests` with the chat model that sends them, on a client of either
    kind (`client` defaults to one configured from the environment, with `max_retries`)."""

    def __init__(
        self,
        client: ClientT | None = None,
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
        self._chat: ChatT = self._chat_model(client, max_retries)

    def _chat_model(self, client: ClientT | None, max_retries: int) -> ChatT:
        """The chat model on `client` that sends the requests."""
        raise NotImplementedError


class FailedModels:
    """The summarizer models that failed during one `summarize`, in order."""

    def __init__(self) -> None:
        self._failures: list[str] = []
        self.last: ProviderError | None = None

    def add(self, model: str, error: ProviderError) -> None:
        """Records a failure the next model may not share (`FALLBACK_ERRORS`); raises
        `SummarizerError` for any other."""
        if not isinstance(error, FALLBACK_ERRORS):
            raise SummarizerError(f"summarizer model {model} failed: {error}") from error
        self._failures.append(f"{model}: {error}")
        self.last = error

    def error(self) -> SummarizerError:
        """The error to raise (from `last`) when every model failed."""
        return SummarizerError("summarizer failed: " + "; then ".join(self._failures))


class AnthropicSummarizer(ClientSummarizer[anthropic.Anthropic, AnthropicChatModel]):
    """Asks an Anthropic model for the summary, in one request.

    `model=None` summarizes with the session's model. When the summarizer model is
    unavailable (after `max_retries` retries), unknown, or its window is too small, and
    `fallback_to_session_model` is set, the session's model is asked once instead. Thinking
    blocks are left out of the transcript unless `include_thinking`.
    """

    def _chat_model(
        self, client: anthropic.Anthropic | None, max_retries: int
    ) -> AnthropicChatModel:
        return AnthropicChatModel(client, max_retries=max_retries)

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        earlier: Sequence[str] = (),
    ) -> Summary:
        """The model's summary of `messages` (and of the `earlier` summaries folded into it),
        asked for in at most `max_tokens` tokens (a reply cut short at the limit is returned
        as it is); raises `SummarizerError`."""
        text = self._request_text(messages, max_tokens, instructions, earlier)
        failed = FailedModels()
        for model in self._models(session_model):
            try:
                return self._summary(self._chat.send_body(self._body(model, text, max_tokens)))
            except ProviderError as error:
                failed.add(model, error)
        raise failed.error() from failed.last
