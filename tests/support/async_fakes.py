"""Async fakes of the awaited ports, and drivers that run one scenario against either service.

The fakes await the synchronous fakes' behaviour (and an optional delay), so a scenario gets
the same summaries and replies from both services."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from abridged.application.async_service import AsyncSessions
from abridged.application.ports import ModelReply, RequestOptions, Summary, TextCallback
from abridged.application.service import Sessions
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message
from tests.support.fakes import FakeChatModel, FakeSummarizer


class AsyncFakeSummarizer:
    """`FakeSummarizer`, awaited, after `delay` seconds of awaiting (the loop stays free)."""

    def __init__(self, inner: FakeSummarizer, delay: float = 0.0) -> None:
        self.inner = inner
        self.delay = delay

    @property
    def name(self) -> str:
        """The inner fake's name."""
        return self.inner.name

    @property
    def calls(self) -> list[tuple[tuple[Message, ...], int, str | None]]:
        """The inner fake's calls."""
        return self.inner.calls

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """The inner fake's summary."""
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.inner.summarize(
            messages, max_tokens=max_tokens, instructions=instructions, session_model=session_model
        )


class SlowSummarizer(FakeSummarizer):
    """`FakeSummarizer` that takes `delay` seconds (blocking its thread), and says from which
    threads it was called."""

    def __init__(self, text: str, delay: float) -> None:
        super().__init__(text)
        self.delay = delay
        self.threads: list[str] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """The fake's summary, after `delay` seconds."""
        import threading

        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        return super().summarize(
            messages, max_tokens=max_tokens, instructions=instructions, session_model=session_model
        )


class AsyncFakeChatModel:
    """`FakeChatModel`, awaited."""

    def __init__(self, inner: FakeChatModel) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        """The inner fake's name."""
        return self.inner.name

    @property
    def context_management(self) -> Mapping[str, JSON] | None:
        """The inner fake's."""
        return self.inner.context_management

    async def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelReply:
        """The inner fake's reply (or error)."""
        await asyncio.sleep(0)
        return self.inner.send(
            context, model=model, max_tokens=max_tokens, options=options, on_text=on_text
        )

    async def count_tokens(self, context: Context, *, model: str) -> int:
        """The inner fake's count."""
        return self.inner.count_tokens(context, model=model)


class Driver:
    """One service seen through awaited calls: `await driver.prepare_request(id)` calls the
    service's method of that name, awaited or not."""

    kind = ""

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        raise NotImplementedError  # pragma: no cover


class SyncDriver(Driver):
    """`Sessions`, called directly (blocking; fine for a scenario)."""

    kind = "sync"

    def __init__(self, app: Sessions) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.app, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call

    async def wait_background(self) -> None:
        """Waits for the background compactions started so far."""
        self.app.background.wait()

    async def aclose(self) -> None:
        """Closes the service."""
        self.app.close()


class AsyncDriver(Driver):
    """`AsyncSessions`, awaited."""

    kind = "async"

    def __init__(self, app: AsyncSessions) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method: Callable[..., Awaitable[Any]] = getattr(self.app, name)
        return method


class GatedSummarizer:
    """An `AsyncSummarizer` that waits at a gate the test opens (`gate.set()`), then answers
    as `FakeSummarizer`; says when it was entered and how often it was cancelled while it
    waited. With the gate never opened, it hangs like a provider that does not answer."""

    def __init__(self, text: str = "Summary of the earlier conversation.") -> None:
        self.inner = FakeSummarizer(text)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0
        self.cancelled = 0

    @property
    def name(self) -> str:
        """Always "gated"."""
        return "gated"

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """The inner fake's summary, once the gate is open."""
        self.calls += 1
        self.entered.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return self.inner.summarize(
            messages, max_tokens=max_tokens, instructions=instructions, session_model=session_model
        )


class GatedChatModel(AsyncFakeChatModel):
    """`AsyncFakeChatModel` that waits at a gate the test opens before each reply, and counts
    how often it was cancelled while it waited."""

    def __init__(self, inner: FakeChatModel | None = None) -> None:
        super().__init__(inner or FakeChatModel())
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.cancelled = 0

    async def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelReply:
        """The inner fake's reply, once the gate is open."""
        self.entered.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return await super().send(
            context, model=model, max_tokens=max_tokens, options=options, on_text=on_text
        )
