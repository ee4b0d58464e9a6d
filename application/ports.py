"""Ports: what the application needs from the outside world.

Each port has a fake (in `tests/support/fakes.py`) and one contract test suite that runs
against the fake and every real adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

import attrs

from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message
from abridged.domain.planner import Decision
from abridged.domain.usage import Usage


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text, offline and deterministically."""

    @property
    def name(self) -> str:
        """A stable name for the counting scheme, recorded with each session."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens in `text`; 0 for the empty string, never negative."""
        ...


MIN_SUMMARY_TOKENS = 16
"""The smallest `max_tokens` a summarizer is asked for; below it no useful summary fits."""


class SummarizerError(Exception):
    """The summarizer could not produce a summary (down, refused, timed out)."""


@attrs.frozen
class Summary:
    """What a summarizer wrote, and what writing it cost."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


class Summarizer(Protocol):
    """Writes the text that stands for a range of messages in later requests."""

    @property
    def name(self) -> str:
        """Which summarizer this is (recorded in `CompactionCompleted`)."""
        ...

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """A summary of `messages` of at most `max_tokens` tokens; raises `SummarizerError`.

        `instructions` are the caller's focus (from a manual compaction); `session_model` is
        the conversation's model, for summarizers that fall back to it.
        """
        ...


class ProviderError(Exception):
    """The model provider failed the request (after the adapter's own retries)."""


class PromptTooLongError(ProviderError):
    """The provider rejected the request as longer than the model's context window."""

    def __init__(self, message: str, *, tokens: int | None = None, maximum: int | None = None):
        super().__init__(message)
        self.tokens = tokens
        self.maximum = maximum


class ProviderUnavailableError(ProviderError):
    """Rate limited, overloaded or failing (429, 5xx, 529) after the retries ran out."""


@attrs.frozen
class ModelReply:
    """The model's answer to one request, with the usage the provider reported."""

    message: Message
    usage: Usage
    model: str
    stop_reason: str | None = None


class ChatModel(Protocol):
    """The conversation's model provider."""

    @property
    def name(self) -> str:
        """Which provider adapter this is."""
        ...

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """The provider-side context management this adapter adds to requests, if any."""
        ...

    def send(self, context: Context, *, model: str, max_tokens: int) -> ModelReply:
        """Sends the context as one request; raises `PromptTooLongError`, `ProviderError`."""
        ...

    def count_tokens(self, context: Context, *, model: str) -> int:
        """The provider's own count of the context's input tokens; raises `ProviderError`."""
        ...


@attrs.frozen
class CompactionReport:
    """What a compaction did, for the caller's logs and progress output."""

    generation: int
    trigger: str
    strategy: str
    retained_from: int
    messages_summarized: int
    tokens_before: int
    tokens_after: int
    turns_kept: int


@attrs.frozen
class HookVerdict:
    """A before-compaction hook's answer: go ahead, cancel (with a reason), or supply the
    summary text itself."""

    cancel: str | None = None
    summary: str | None = None


class CompactionHooks(Protocol):
    """Lets a host app take part in compaction."""

    def before_compaction(
        self, session_id: UUID, decision: Decision, messages: Sequence[Message]
    ) -> HookVerdict | None:
        """Called before summarizing `messages`; `None` or an empty verdict goes ahead."""
        ...

    def after_compaction(self, session_id: UUID, report: CompactionReport) -> None:
        """Called once the compaction is saved."""
        ...


class ContextProvider(Protocol):
    """Content recomputed for every request (date, open files, …): never stored, never
    compacted, sent last in the last user message."""

    def content(self, session_id: UUID) -> str | None:
        """The content for the next request of the session, or `None`."""
        ...
