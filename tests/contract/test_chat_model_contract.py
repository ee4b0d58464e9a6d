"""The `ChatModel` contract, run against the fake and the Anthropic adapter (on a local server)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence

import pytest

from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.application.ports import ChatModel, PromptTooLongError
from abridged.domain.context import Context
from abridged.domain.messages import Message, Role, ToolResultBlock, ToolUseBlock
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)
from tests.support.fakes import FakeChatModel

MODEL = "claude-sonnet-4-6"
WINDOW = 200_000
TOOLS = ({"name": "bash", "description": "Runs a command.", "input_schema": {"type": "object"}},)


def make_context(messages: Sequence[Message], *, window: int = WINDOW) -> Context:
    """A context of `messages`, estimated at one token per four characters of their JSON."""
    wire = json.dumps([message.to_wire() for message in messages])
    return Context(
        system="You are a careful coding agent.",
        tools=TOOLS,
        summaries=(),
        messages=tuple(messages),
        estimate=math.ceil(len(wire) / 4),
        budget=window - 1_000,
        window=window,
    )


def tool_loop() -> list[Message]:
    return [
        Message.user("List the files."),
        Message.assistant("Listing.", ToolUseBlock("toolu_01", "bash", {"command": "ls"})),
        Message.user(ToolResultBlock("toolu_01", "README.md\nsetup.py")),
    ]


class ChatModelContract:
    """What every `ChatModel` promises."""

    def make_chat_model(self) -> ChatModel:
        raise NotImplementedError

    def test_name_is_a_non_empty_string(self) -> None:
        assert self.make_chat_model().name.strip()

    def test_has_no_context_management_unless_configured(self) -> None:
        assert self.make_chat_model().context_management is None

    def test_send_returns_an_assistant_message_and_its_usage(self) -> None:
        reply = self.make_chat_model().send(make_context(tool_loop()), model=MODEL, max_tokens=256)
        assert reply.message.role is Role.ASSISTANT
        assert reply.message.content
        assert reply.model.strip()
        usage = reply.usage
        assert (
            min(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_input_tokens,
                usage.cache_creation_input_tokens,
            )
            >= 0
        )
        assert usage.prompt_tokens > 0

    def test_count_tokens_is_positive_and_grows_with_the_context(self) -> None:
        chat_model = self.make_chat_model()
        short = chat_model.count_tokens(make_context(tool_loop()[:1]), model=MODEL)
        longer = chat_model.count_tokens(make_context(tool_loop()), model=MODEL)
        assert isinstance(short, int)
        assert 0 < short < longer

    def test_a_prompt_over_the_window_is_a_prompt_too_long_error(self) -> None:
        huge = Message.user("a" * (4 * WINDOW + 40_000))
        with pytest.raises(PromptTooLongError) as raised:
            self.make_chat_model().send(make_context([huge]), model=MODEL, max_tokens=256)
        assert raised.value.maximum == WINDOW
        assert raised.value.tokens is not None
        assert raised.value.tokens > WINDOW


class TestFakeChatModel(ChatModelContract):
    def make_chat_model(self) -> ChatModel:
        return FakeChatModel()

    def test_answers_from_its_script_then_by_default(self) -> None:
        scripted = FakeChatModel().send(make_context(tool_loop()), model=MODEL, max_tokens=10)
        chat_model = FakeChatModel([scripted, PromptTooLongError("too long", tokens=9)])
        context = make_context(tool_loop())
        assert chat_model.send(context, model=MODEL, max_tokens=10) is scripted
        with pytest.raises(PromptTooLongError):
            chat_model.send(context, model=MODEL, max_tokens=10)
        assert chat_model.send(context, model=MODEL, max_tokens=10).message.text == "Done."
        assert chat_model.sent == [(context, MODEL, 10)] * 3

    def test_counts_what_it_is_told_or_the_estimate(self) -> None:
        context = make_context(tool_loop())
        assert FakeChatModel(tokens=42).count_tokens(context, model=MODEL) == 42
        assert FakeChatModel().count_tokens(context, model=MODEL) == context.estimate


class TestAnthropicChatModel(ChatModelContract):
    @pytest.fixture(autouse=True)
    def _server(self, fake_anthropic: FakeAnthropic) -> Iterator[None]:
        self.server = fake_anthropic
        yield
        assert not fake_anthropic.violations

    def make_chat_model(self) -> ChatModel:
        return AnthropicChatModel(self.server.client(), max_retries=0)
