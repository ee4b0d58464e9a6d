"""What the synchronous and asynchronous Anthropic chat models share (`anthropic/calls.py`):
the same translation of failures, whichever client sends, against the local fake Messages API."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import TypeVar

import anthropic
import pytest

from abridged.adapters.anthropic.async_clients import AsyncAnthropicChatModel
from abridged.adapters.anthropic.calls import counted_tokens, read_reply, translated_errors
from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.adapters.anthropic.errors import MalformedResponseError
from abridged.application.ports import ProviderError, ProviderUnavailableError
from abridged.domain.context import Context
from abridged.domain.messages import Message
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    COUNT_TOKENS_PATH,
    FakeAnthropic,
    Response,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)

T = TypeVar("T")

UNREADABLE: dict[str, Response] = {
    "truncated JSON": api.truncated_json(),
    "empty body": api.empty_body(),
    "text/plain body": api.plain_text(),
    "bad event data": api.bad_sse_data(),
}

CONTEXT = Context("", (), (), (Message.user("Hi"),), 10, 1_000, 2_000)


def run(call: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await call()

    return asyncio.run(main())


def sync_send(server: FakeAnthropic) -> object:
    model = AnthropicChatModel(server.client(), max_retries=0)
    return model.send(CONTEXT, model="claude-test", max_tokens=16)


def async_send(server: FakeAnthropic) -> object:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=10.0
    )
    model = AsyncAnthropicChatModel(client, max_retries=0)
    return run(lambda: model.send(CONTEXT, model="claude-test", max_tokens=16))


def async_count(server: FakeAnthropic) -> object:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=10.0
    )
    model = AsyncAnthropicChatModel(client, max_retries=0)
    return run(lambda: model.count_tokens(CONTEXT, model="claude-test"))


@pytest.mark.parametrize("send", [sync_send, async_send], ids=["sync", "async"])
@pytest.mark.parametrize("fault", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_reply_is_a_malformed_response_whichever_client_sends(
    fake_anthropic: FakeAnthropic, send: Callable[[FakeAnthropic], object], fault: Response
) -> None:
    fake_anthropic.enqueue(fault)

    with pytest.raises(MalformedResponseError, match="cannot be read"):
        send(fake_anthropic)


def test_an_unreadable_count_is_a_malformed_response_for_the_async_client(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.enqueue(api.truncated_json(), path=COUNT_TOKENS_PATH)

    with pytest.raises(MalformedResponseError, match="token count cannot be read"):
        async_count(fake_anthropic)


def test_translated_errors_lets_a_provider_error_pass_as_it_is() -> None:
    error = ProviderUnavailableError("down")

    with pytest.raises(ProviderUnavailableError) as raised, translated_errors("unreadable"):
        raise error

    assert raised.value is error


def test_translated_errors_makes_any_other_exception_a_malformed_response() -> None:
    with pytest.raises(MalformedResponseError) as raised, translated_errors("the body"):
        raise KeyError("content")

    assert str(raised.value) == "the body: KeyError: 'content'"
    assert isinstance(raised.value.__cause__, KeyError)


def test_translated_errors_translates_the_sdks_errors() -> None:
    sdk_error = anthropic.AnthropicError("boom")

    with pytest.raises(ProviderError) as raised, translated_errors("the body"):
        raise sdk_error

    assert not isinstance(raised.value, MalformedResponseError)
    assert str(raised.value) == "Anthropic API call failed: AnthropicError: boom"
    assert raised.value.__cause__ is sdk_error


def test_a_reply_of_an_unexpected_shape_is_a_malformed_response() -> None:
    with pytest.raises(MalformedResponseError, match="unexpected shape"):
        read_reply(SimpleNamespace(role="assistant"))


def test_a_reply_a_session_cannot_keep_stays_a_plain_provider_error() -> None:
    reply = SimpleNamespace(
        role="assistant",
        content=[SimpleNamespace(type="tool_use", id="toolu_1", name="bash", input="ls")],
        usage=None,
        model="claude-test",
        stop_reason="tool_use",
    )

    with pytest.raises(ProviderError) as raised:
        read_reply(reply)

    assert not isinstance(raised.value, MalformedResponseError)
    assert "could not be read" in str(raised.value)


@pytest.mark.parametrize("value", [-1, "many", None])
def test_a_count_that_is_not_a_count_is_a_malformed_response(value: object) -> None:
    with pytest.raises(MalformedResponseError):
        counted_tokens(SimpleNamespace(input_tokens=value))


def test_a_count_is_read_as_an_integer() -> None:
    assert counted_tokens(SimpleNamespace(input_tokens=42)) == 42
