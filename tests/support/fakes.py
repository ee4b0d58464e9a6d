"""Fakes for the application's ports: in memory, deterministic, and held to the same contract
test suites as the real adapters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from abridged.application.ports import (
    MIN_SUMMARY_TOKENS,
    ModelReply,
    PromptTooLongError,
    RequestOptions,
    SummarizerError,
    Summary,
)
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message
from abridged.domain.usage import Usage


class FakeTokenCounter:
    """Counts words plus line breaks; any non-empty text counts at least 1."""

    approximate = False
    """Its counts are what a token is in the tests that use it: no model ratio applies."""

    @property
    def name(self) -> str:
        """Always "fake:words"."""
        return "fake:words"

    def count(self, text: str) -> int:
        """Words plus newlines; 1 for non-empty text with neither; 0 for ""."""
        if not text:
            return 0
        return max(1, len(text.split()) + text.count("\n"))


class FakeSummarizer:
    """Returns `text` cut to `max_tokens` words; fails the first `fail` calls; records calls."""

    MIN_TOKENS = MIN_SUMMARY_TOKENS

    def __init__(self, text: str = "Summary of the earlier conversation.", fail: int = 0) -> None:
        if not text.strip():
            raise ValueError("the fake's summary text must not be blank")
        self.text = text
        self.fail = fail
        self.calls: list[tuple[tuple[Message, ...], int, str | None]] = []

    @property
    def name(self) -> str:
        """Always "fake"."""
        return "fake"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """The fixed text, at most `max_tokens` words; raises `SummarizerError` when told to fail,
        for no messages, or for `max_tokens` below 16."""
        self.calls.append((tuple(messages), max_tokens, instructions))
        if len(self.calls) <= self.fail:
            raise SummarizerError(f"fake summarizer failure {len(self.calls)} of {self.fail}")
        if not messages:
            raise SummarizerError("nothing to summarize: no messages were given")
        if max_tokens < self.MIN_TOKENS:
            raise SummarizerError(
                f"max_tokens={max_tokens} is too small; a summary needs at least "
                f"{self.MIN_TOKENS} tokens"
            )
        words = self.text.split()[:max_tokens]
        text = " ".join(words)
        return Summary(
            text=text,
            model="fake-v1",
            input_tokens=sum(len(m.text.split()) for m in messages),
            output_tokens=len(words),
        )


class FakeChatModel:
    """Answers with scripted replies (a `ModelReply` is returned, an exception raised), then
    with "Done."; records what it was sent. Like a provider, it refuses a context whose
    estimate is over its window with `PromptTooLongError`. `count_tokens` answers `tokens`,
    or the context's estimate."""

    def __init__(
        self,
        replies: Sequence[ModelReply | Exception] = (),
        *,
        tokens: int | None = None,
        context_management: Mapping[str, JSON] | None = None,
    ) -> None:
        self.replies = list(replies)
        self.tokens = tokens
        self._context_management = context_management
        self.sent: list[tuple[Context, str, int]] = []
        self.options: list[RequestOptions | None] = []
        self.counted: list[tuple[Context, str]] = []

    @property
    def name(self) -> str:
        """Always "fake"."""
        return "fake"

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """What it was given, or None."""
        return self._context_management

    def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The next scripted reply (raised when it is an exception), else "Done."; `on_text`
        gets the reply's text in one piece."""
        self.sent.append((context, model, max_tokens))
        self.options.append(options)
        reply = self._next(context, model)
        if on_text is not None and reply.message.text:
            on_text(reply.message.text)
        return reply

    def _next(self, context: Context, model: str) -> ModelReply:
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply
        if context.estimate > context.window:
            raise PromptTooLongError(
                f"prompt is too long: {context.estimate} tokens > {context.window} maximum",
                tokens=context.estimate,
                maximum=context.window,
            )
        return ModelReply(
            message=Message.assistant("Done."),
            usage=Usage(input_tokens=context.estimate, output_tokens=1),
            model=model,
            stop_reason="end_turn",
        )

    def count_tokens(self, context: Context, *, model: str) -> int:
        """`tokens` if it was given, else the context's estimate (at least 1)."""
        self.counted.append((context, model))
        return self.tokens if self.tokens is not None else max(1, context.estimate)
