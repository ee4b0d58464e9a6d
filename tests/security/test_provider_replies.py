"""Replies the provider (or a proxy in front of it) sends that are not a finished reply are
errors, not replies recorded as if the model had said them; a reply a de-streaming proxy sends
as one JSON body is read; a request that cannot be serialized is not a provider outage.
Each case runs through the sync and the async chat model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import pytest

from abridged.adapters.anthropic.async_clients import AsyncAnthropicChatModel
from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.adapters.anthropic.errors import MalformedResponseError, ReplyCutShortError
from abridged.application.ports import ModelReply, ProviderUnavailableError
from abridged.domain.errors import UnencodableContentError
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import FakeAnthropic

BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
}


def sse(*events: dict[str, Any]) -> api.Response:
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return api.malformed(raw, "text/event-stream; charset=utf-8")


START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
}
END: list[dict[str, Any]] = [
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
    {"type": "message_stop"},
]


def text_block(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
    ]


def tool_block(partial_json: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": partial_json},
        },
        {"type": "content_block_stop", "index": 0},
    ]


def send(kind: str, server: FakeAnthropic, body: dict[str, Any] = BODY) -> ModelReply:
    if kind == "sync":
        return AnthropicChatModel(server.client(), max_retries=0).send_body(body)
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=10.0
    )
    return asyncio.run(AsyncAnthropicChatModel(client, max_retries=0).send_body(body))


KINDS = ["sync", "async"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_that_closes_without_message_stop_is_an_error(
    kind: str, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(sse(START, *text_block("Partial ans")))

    with pytest.raises(MalformedResponseError, match="no message_stop"):
        send(kind, fake_anthropic)


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_call_whose_streamed_input_is_not_json_is_an_error(
    kind: str, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(sse(START, *tool_block('{"command": "rm -rf /tmp/bui'), *END))

    with pytest.raises(MalformedResponseError, match="not a complete JSON object"):
        send(kind, fake_anthropic)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stop_reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_tool_call_cut_at_the_output_limit_asks_for_more_room_not_a_retry(
    kind: str, stop_reason: str, fake_anthropic: FakeAnthropic
) -> None:
    cut = [{**END[0], "delta": {"stop_reason": stop_reason}}, END[1]]
    fake_anthropic.enqueue(sse(START, *tool_block('{"command": "rm -rf /tmp/bui'), *cut))

    with pytest.raises(ReplyCutShortError, match="larger max_tokens") as raised:
        send(kind, fake_anthropic)

    # The same request would be cut the same way: not an error a host retries as it is.
    assert not isinstance(raised.value, ProviderUnavailableError)


@pytest.mark.parametrize("kind", KINDS)
def test_a_finished_tool_call_is_read(kind: str, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(sse(START, *tool_block('{"command": "ls"}'), *END))

    reply = send(kind, fake_anthropic)

    assert reply.message.tool_uses[0].input == {"command": "ls"}
    assert reply.stop_reason == "tool_use"


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_a_proxy_sent_as_one_json_body_is_read(
    kind: str, fake_anthropic: FakeAnthropic
) -> None:
    whole = {**START["message"], "content": [{"type": "text", "text": "Done."}]}
    whole |= {"stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 2}}
    fake_anthropic.enqueue(api.malformed(json.dumps(whole).encode(), "application/json"))

    reply = send(kind, fake_anthropic)

    assert reply.message.text == "Done."
    assert reply.usage.input_tokens == 10


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_json_cannot_carry_is_not_a_provider_outage(
    kind: str, fake_anthropic: FakeAnthropic
) -> None:
    poisoned = {
        **BODY,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "run", "input": {"x": float("nan")}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ],
    }

    with pytest.raises(UnencodableContentError) as raised:
        send(kind, fake_anthropic, poisoned)

    assert not isinstance(raised.value, ProviderUnavailableError)
    assert fake_anthropic.requests_to() == []
