"""The host-facing behaviours through both services, the same scenarios run by `bootstrap`
and `bootstrap_async`: no session stuck after a smaller window is learned, the SDK's own
overflow error read, erasure, notices from `complete`, the message cap and metrics, and a
count_tokens outage."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from uuid import UUID

import anthropic
import httpx2 as httpx
import pytest

from abridged.adapters.bootstrap import bootstrap, bootstrap_async
from abridged.application.notices import Notice
from abridged.application.ports import (
    MetricNames,
    ModelReply,
    PromptTooLongError,
    ProviderUnavailableError,
)
from abridged.domain.context import Context
from abridged.domain.errors import MessageTooLargeError, UnknownSessionError
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.support.async_fakes import AsyncDriver, AsyncFakeChatModel, Driver, SyncDriver
from tests.support.builders import words
from tests.support.fakes import FakeChatModel, FakeSummarizer, FakeTokenCounter

KINDS = ["sync", "async"]
LARGE = 150_000
"""Words of a message larger than the provider's window, smaller than the configured one."""
PROVIDER_WINDOW = 64_000


class CountingMetrics:
    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, name: str, value: int = 1, attributes: Any = None) -> None:
        self.added.append(name)

    def record(self, name: str, value: float, attributes: Any = None) -> None:
        self.added.append(name)


class CountTokensDown(FakeChatModel):
    def count_tokens(self, context: Context, *, model: str) -> int:
        raise ProviderUnavailableError("count_tokens: 529 overloaded")


def driver(kind: str, db: Path, chat: FakeChatModel | None = None, **options: Any) -> Driver:
    counter = FakeTokenCounter()
    summarizer = FakeSummarizer(words(30, "fact"))
    if kind == "sync":
        return SyncDriver(
            bootstrap(db, counter=counter, summarizer=summarizer, chat_model=chat, **options)
        )
    return AsyncDriver(
        bootstrap_async(
            db,
            counter=counter,
            summarizer=summarizer,
            chat_model=AsyncFakeChatModel(chat) if chat else None,
            **options,
        )
    )


def run(
    make: Callable[[], Driver], scenario: Callable[[Driver], Coroutine[Any, Any, None]]
) -> None:
    async def main() -> None:
        app = make()
        try:
            await scenario(app)
        finally:
            await app.aclose()

    asyncio.run(main())


async def large_message_session(app: Driver) -> UUID:
    # A model missing from the table: the window defaults to 200k, larger than the provider's.
    session_id: UUID = await app.start_session(model="some-new-model", max_output_tokens=4_000)
    await app.append_message(session_id, Message.user("hello"))
    await app.record_reply(session_id, Message.assistant("hi"))
    await app.append_message(session_id, Message.user(words(LARGE)))
    return session_id


def too_long_for_the_provider() -> anthropic.BadRequestError:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: 150021 tokens > {PROVIDER_WINDOW} maximum",
        },
    }
    request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")
    return anthropic.BadRequestError(
        body["error"]["message"],  # type: ignore[index]
        response=httpx.Response(400, request=request, json=body),
        body=body,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_an_overflow_report_with_the_sdks_error_leads_to_a_request_that_fits(
    kind: str, tmp_path: Path
) -> None:
    async def scenario(app: Driver) -> None:
        session_id = await large_message_session(app)
        first = await app.prepare_request(session_id)
        assert first.context.estimate > PROVIDER_WINDOW  # shown for the configured window

        prepared = await app.report_overflow(session_id, too_long_for_the_provider())

        assert prepared.context.estimate <= PROVIDER_WINDOW - 4_000
        session = await app.session(session_id)
        assert session.provider_window == PROVIDER_WINDOW
        again = await app.prepare_request(session_id)  # and it stays so
        assert again.context.estimate == prepared.context.estimate

    run(lambda: driver(kind, tmp_path / "s.sqlite3"), scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_a_smaller_window_set_by_reconfigure_leads_to_a_request_that_fits(
    kind: str, tmp_path: Path
) -> None:
    async def scenario(app: Driver) -> None:
        session_id = await large_message_session(app)

        await app.reconfigure(session_id, context_window=PROVIDER_WINDOW)
        prepared = await app.prepare_request(session_id)

        assert prepared.context.estimate <= PROVIDER_WINDOW - 4_000
        names = [type(e).__name__ for e in await app.history(session_id)]
        assert "ModelChanged" in names
        assert "MessagesReshown" in names

    run(lambda: driver(kind, tmp_path / "s.sqlite3"), scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_complete_recovers_from_a_provider_window_smaller_than_the_configured_one(
    kind: str, tmp_path: Path
) -> None:
    refused = PromptTooLongError("prompt is too long", tokens=150_021, maximum=PROVIDER_WINDOW)
    chat = FakeChatModel([refused])
    notices: list[Notice] = []

    async def scenario(app: Driver) -> None:
        session_id = await large_message_session(app)

        reply = await app.complete(session_id, on_notice=notices.append)

        assert reply.message.text == "Done."
        assert chat.sent[-1][0].estimate <= PROVIDER_WINDOW - 4_000
        assert "overflow" in [n.kind for n in notices]

    run(lambda: driver(kind, tmp_path / "s.sqlite3", chat), scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_erase_works_through_either_service(kind: str, tmp_path: Path) -> None:
    async def scenario(app: Driver) -> None:
        session_id: UUID = await app.start_session(model="claude-test", max_output_tokens=100)
        await app.append_message(session_id, Message.user("my secret"))

        assert await app.delete_session(str(session_id), "user request", erase=True) == (
            session_id,
        )
        with pytest.raises(UnknownSessionError):
            await app.history(session_id)

    run(lambda: driver(kind, tmp_path / "s.sqlite3"), scenario)


@pytest.mark.parametrize("kind", KINDS)
def test_the_message_cap_and_metrics_are_taken_by_either_bootstrap(
    kind: str, tmp_path: Path
) -> None:
    metrics = CountingMetrics()
    refused = PromptTooLongError("prompt is too long", tokens=9_000, maximum=PROVIDER_WINDOW)

    async def scenario(app: Driver) -> None:
        session_id: UUID = await app.start_session(model="claude-test", max_output_tokens=100)
        with pytest.raises(MessageTooLargeError):
            await app.append_message(session_id, Message.user("x" * 2_000))
        await app.append_message(session_id, Message.user("short"))
        await app.complete(session_id)
        assert MetricNames.OVERFLOWS in metrics.added

    run(
        lambda: driver(
            kind,
            tmp_path / "s.sqlite3",
            FakeChatModel([refused]),
            metrics=metrics,
            max_message_bytes=1_000,
        ),
        scenario,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_with_count_tokens_down_complete_sends_as_estimated(kind: str, tmp_path: Path) -> None:
    chat = CountTokensDown()

    async def scenario(app: Driver) -> None:
        session_id: UUID = await app.start_session(
            model="claude-test",
            context_window=20_000,
            max_output_tokens=1_000,
            settings=CompactionSettings(threshold_ratio=1.0),
        )
        await app.append_message(session_id, Message.user(words(400)))
        while (await app.session(session_id)).estimate() < 0.9 * 19_000:
            await app.record_reply(session_id, Message.assistant("Go on."))
            await app.append_message(session_id, Message.user(words(400)))
        assert (await app.prepare_request(session_id)).needs_count

        reply: ModelReply = await app.complete(session_id)

        assert reply.message.text == "Done."
        assert len(chat.sent) == 1

    run(lambda: driver(kind, tmp_path / "s.sqlite3", chat), scenario)
