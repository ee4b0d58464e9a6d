"""A host's own capabilities rows reach every part that builds a request: a model the
built-in table does not know, described by the host as binding thinking to its prefix and
taking `role: "system"` messages, gets its system messages sent as such by the chat model
(through the real `anthropic` SDK against the local fake API, which checks that model like
one of today's), and its signed thinking accepted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import anthropic
import pytest

from abridged.adapters.anthropic.async_clients import AsyncAnthropicChatModel
from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.application.async_service import AsyncSessions
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.capabilities import capabilities_for
from abridged.domain.messages import Message
from tests.support.async_fakes import AsyncFakeSummarizer
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
    message,
)
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

HOST_MODEL = "acme-reasoner-1"
HOST_ROW = {"prefix_bound_thinking": True, "system_messages": True, "tool_changes": True}
ADAPTIVE = {"type": "adaptive"}


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The fake API, checking the host's model like a model of today that binds thinking."""
    fake_anthropic.models_like[HOST_MODEL] = "claude-fable-5"
    yield fake_anthropic
    assert not fake_anthropic.violations


def thinking_reply(text: str) -> Any:
    # The fake signs the thinking over the prefix it was produced under.
    return message(
        [
            {"type": "thinking", "thinking": f"Thinking about {text}.", "signature": "unsigned"},
            {"type": "text", "text": text},
        ]
    )


def test_a_host_row_for_an_unknown_model_reaches_the_chat_model(server: FakeAnthropic) -> None:
    assert not capabilities_for(HOST_MODEL).system_messages  # the built-in table: strictest
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        chat_model=AnthropicChatModel(server.client()),
        model_capabilities={HOST_MODEL: HOST_ROW},
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model=HOST_MODEL, context_window=20_000, max_output_tokens=2_000, system="Be careful."
    )
    app.append_message(session_id, Message.user("Plan the change."))
    server.enqueue(thinking_reply("A plan."))
    app.complete(session_id, thinking=ADAPTIVE)

    # The model takes system messages (the host says so): the new prompt goes as one.
    app.reconfigure(session_id, system="Be careful and terse.")
    app.append_message(session_id, Message.user("Go on."))
    server.enqueue(thinking_reply("Done."))
    app.complete(session_id, thinking=ADAPTIVE)

    assert_system_message_sent(server)
    assert audit_session(app, session_id).ok


def assert_system_message_sent(server: FakeAnthropic) -> None:
    body = server.requests_to()[-1].body
    assert body["system"][0]["text"] == "Be careful."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "system"]
    assert "Be careful and terse." in str(body["messages"][-1]["content"])
    # The first reply's thinking went back unchanged and passed the prefix check.
    assert body["messages"][1]["content"][0]["type"] == "thinking"


def test_the_async_chat_model_renders_with_the_host_row_too(server: FakeAnthropic) -> None:
    async def converse() -> tuple[AsyncSessions, UUID]:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=10.0
        )
        app = AsyncSessions(
            counter=FakeTokenCounter(),
            summarizer=AsyncFakeSummarizer(FakeSummarizer()),
            chat_model=AsyncAnthropicChatModel(client),
            model_capabilities={HOST_MODEL: HOST_ROW},
            env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        )
        session_id = await app.start_session(
            model=HOST_MODEL, context_window=20_000, max_output_tokens=2_000, system="Be careful."
        )
        await app.append_message(session_id, Message.user("Plan the change."))
        server.enqueue(thinking_reply("A plan."))
        await app.complete(session_id, thinking=ADAPTIVE)
        await app.reconfigure(session_id, system="Be careful and terse.")
        await app.append_message(session_id, Message.user("Go on."))
        server.enqueue(thinking_reply("Done."))
        await app.complete(session_id, thinking=ADAPTIVE)
        return app, session_id

    app, session_id = asyncio.run(converse())
    assert_system_message_sent(server)
    assert audit_session(app.sync, session_id).ok
