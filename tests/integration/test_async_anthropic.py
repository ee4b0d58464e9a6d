"""The async Anthropic adapters through the real SDK's `AsyncAnthropic`, against the local fake
Messages API: the same contracts as the synchronous adapters, and an asyncio host that runs
many sessions at once without wrapping a single call in a thread."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar
from uuid import UUID

import anthropic
import pytest

from abridged.adapters.anthropic.async_clients import (
    AsyncAnthropicChatModel,
    AsyncAnthropicSummarizer,
)
from abridged.adapters.anthropic.prompts import DEFAULT_PROMPT
from abridged.adapters.bootstrap import bootstrap_async
from abridged.application.ports import (
    ChatModel,
    ModelReply,
    PromptTooLongError,
    RequestOptions,
    Summarizer,
    Summary,
    TextCallback,
    TokenCounter,
)
from abridged.domain.context import Context
from abridged.domain.messages import JSON, Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.contract.test_chat_model_contract import ChatModelContract
from tests.contract.test_summarizer_contract import SummarizerContract
from tests.support import fake_anthropic as api
from tests.support.builders import TOOLS, words
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)
from tests.support.fakes import FakeTokenCounter

T = TypeVar("T")


TLS = ssl.create_default_context()
"""One TLS context for every client: each new client loaded the CA bundle again (40 ms, most
of making one), and these tests make one per call."""


def async_client(server: FakeAnthropic) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-test",
        base_url=server.base_url,
        max_retries=0,
        timeout=10.0,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=TLS),
    )


def blocking(call: Callable[[], Awaitable[T]]) -> T:
    async def run() -> T:
        return await call()

    return asyncio.run(run())


class BlockingChatModel:
    """An async adapter seen through the synchronous contract: each call on a fresh loop (an
    async client belongs to the loop it first ran on, so each call makes its own)."""

    def __init__(self, server: FakeAnthropic) -> None:
        self.server = server

    def _adapter(self) -> AsyncAnthropicChatModel:
        return AsyncAnthropicChatModel(async_client(self.server), max_retries=0)

    @property
    def name(self) -> str:
        return self._adapter().name

    @property
    def context_management(self) -> dict[str, JSON] | None:
        return None if self._adapter().context_management is None else {}

    def send(
        self,
        context: Context,
        *,
        model: str,
        max_tokens: int,
        options: RequestOptions | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelReply:
        return blocking(
            lambda: self._adapter().send(
                context, model=model, max_tokens=max_tokens, options=options, on_text=on_text
            )
        )

    def count_tokens(self, context: Context, *, model: str) -> int:
        return blocking(lambda: self._adapter().count_tokens(context, model=model))


class BlockingSummarizer:
    """`AsyncAnthropicSummarizer` seen through the synchronous contract."""

    def __init__(self, server: FakeAnthropic) -> None:
        self.server = server

    @property
    def name(self) -> str:
        return AsyncAnthropicSummarizer(async_client(self.server)).name

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        summarizer = AsyncAnthropicSummarizer(async_client(self.server), max_retries=0)
        return blocking(
            lambda: summarizer.summarize(
                messages,
                max_tokens=max_tokens,
                instructions=instructions,
                session_model=session_model,
            )
        )


class TestAsyncAnthropicChatModel(ChatModelContract):
    @pytest.fixture(autouse=True)
    def _server(self, fake_anthropic: FakeAnthropic) -> Iterator[None]:
        self.server = fake_anthropic
        yield
        assert not fake_anthropic.violations

    def make_chat_model(self) -> ChatModel:
        return BlockingChatModel(self.server)

    def test_context_management_is_sent_with_its_beta(self) -> None:
        edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
        chat = AsyncAnthropicChatModel(
            async_client(self.server), max_retries=0, context_management=edits
        )
        context = Context("", (), (), (Message.user("Hi"),), 10, 1_000, 2_000)
        blocking(lambda: chat.send(context, model="claude-test", max_tokens=16))
        (request,) = self.server.requests
        assert request.body["context_management"] == edits
        assert "context-management-2025-06-27" in request.headers["anthropic-beta"]

    def test_a_refused_prompt_is_typed_like_the_synchronous_adapter(self) -> None:
        self.server.enqueue(api.prompt_too_long(tokens=210_000, maximum=200_000))
        chat = AsyncAnthropicChatModel(async_client(self.server), max_retries=0)
        context = Context("", (), (), (Message.user("Hi"),), 10, 1_000, 2_000)
        with pytest.raises(PromptTooLongError) as raised:
            blocking(lambda: chat.send(context, model="claude-test", max_tokens=16))
        assert (raised.value.tokens, raised.value.maximum) == (210_000, 200_000)


class TestAsyncAnthropicSummarizer(SummarizerContract):
    @pytest.fixture(autouse=True)
    def _server(self, fake_anthropic: FakeAnthropic) -> Iterator[None]:
        self.server = fake_anthropic
        yield
        assert not fake_anthropic.violations

    def make_summarizer(self) -> Summarizer:
        return BlockingSummarizer(self.server)

    def make_counter(self) -> TokenCounter:
        return FakeTokenCounter()

    def test_an_unknown_summarizer_model_falls_back_to_the_sessions(self) -> None:
        self.server.fail_model("claude-haiku-4-5", api.model_not_found("claude-haiku-4-5"))
        summary = self.make_summarizer().summarize(
            [Message.user("Fix the export.")], max_tokens=64, session_model="claude-session"
        )
        assert summary.model == "claude-session"
        assert [r.model for r in self.server.requests] == ["claude-haiku-4-5", "claude-session"]


SESSIONS = 8
TURNS = 40


def test_an_asyncio_host_runs_many_sessions_at_once_without_threads_of_its_own(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """8 sessions x 40 turns, all at once: the host only awaits. Small windows make the
    sessions compact, with summaries the async summarizer writes through the SDK."""

    async def host() -> list[UUID]:
        async with bootstrap_async(
            tmp_path / "sessions.sqlite3",
            counter=FakeTokenCounter(),
            chat_model=AsyncAnthropicChatModel(async_client(fake_anthropic), max_retries=0),
            summarizer=AsyncAnthropicSummarizer(async_client(fake_anthropic), max_retries=0),
        ) as sessions:

            async def conversation(n: int) -> UUID:
                session_id = await sessions.start_session(
                    model="claude-sonnet-4-6",
                    context_window=2_000,
                    max_output_tokens=200,
                    tools=TOOLS,
                    settings=CompactionSettings(
                        threshold_floor_tokens=0, background_threshold_ratio=0.5
                    ),
                )
                for turn in range(TURNS):
                    await sessions.append_message(
                        session_id, Message.user(f"Session {n}, request {turn}: " + words(40))
                    )
                    await sessions.complete(session_id)
                return session_id

            ids = await asyncio.gather(*(conversation(n) for n in range(SESSIONS)))
            await sessions.wait_background()
            for session_id in ids:
                history = await sessions.history(session_id)
                appended = [e for e in history if isinstance(e, Session.MessageAppended)]
                assert len(appended) == 2 * TURNS
                assert any(isinstance(e, Session.CompactionCompleted) for e in history)
            return ids

    ids = asyncio.run(host())

    assert len(set(ids)) == SESSIONS
    assert not fake_anthropic.violations
    sent = [r for r in fake_anthropic.requests if r.path == api.MESSAGES_PATH]
    replies = [r for r in sent if r.body.get("system") != DEFAULT_PROMPT.system]
    assert len(replies) == SESSIONS * TURNS
    assert len(sent) > len(replies)  # the summaries were written through the SDK too
