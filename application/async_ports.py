"""The async ports an asyncio host gives `AsyncSessions`: the chat model and summarizer, awaited
on the host's event loop. The token counter stays synchronous (offline and fast)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, Unpack

from abridged.application.ports import ModelReply, SendParameters, Summary, SummaryParameters
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message

__all__ = ["AsyncChatModel", "AsyncSummarizer"]


class AsyncSummarizer(Protocol):
    """`Summarizer`, awaited."""

    @property
    def name(self) -> str:
        """Which summarizer this is (recorded in `CompactionCompleted`)."""
        ...

    async def summarize(
        self, messages: Sequence[Message], **request: Unpack[SummaryParameters]
    ) -> Summary:
        """`Summarizer.summarize`, awaited."""
        ...


class AsyncChatModel(Protocol):
    """`ChatModel`, awaited."""

    @property
    def name(self) -> str:
        """Which provider adapter this is."""
        ...

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """The provider-side context management this adapter adds to requests, if any."""
        ...

    async def send(self, context: Context, **request: Unpack[SendParameters]) -> ModelReply:
        """`ChatModel.send`, awaited."""
        ...

    async def count_tokens(self, context: Context, *, model: str) -> int:
        """The provider's own count of the context's input tokens; raises `ProviderError`."""
        ...
