"""A streamed reply that breaks off: the client is told (its SDK raises instead of taking a
half reply as whole), nothing half is recorded, and the session takes the next request."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic

MODEL = "claude-sonnet-4-6"


def roles(store: Sessions) -> list[str]:
    (info,) = store.list_sessions().sessions
    return [
        e.message.to_wire()["role"]
        for e in store.history(info.id)
        if isinstance(e, MessageAppended)
    ]


@pytest.mark.parametrize(
    "broken",
    [fake.dropped_stream("A long partial answer " * 20), fake.overloaded_midstream()],
    ids=["connection dropped", "error event"],
)
def test_a_stream_that_breaks_off_is_an_error_and_the_session_goes_on(
    client: anthropic.Anthropic,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    broken: fake.Response,
) -> None:
    history: list[Any] = [{"role": "user", "content": "Why does the export drop a row?"}]
    fake_anthropic.enqueue(broken)
    with (
        pytest.raises(anthropic.APIError),
        client.messages.stream(model=MODEL, max_tokens=500, messages=history) as stream,
    ):
        stream.get_final_message()
    assert roles(store) == ["user"]  # no half reply

    # The client tries again with the same history: answered and recorded once.
    with client.messages.stream(model=MODEL, max_tokens=500, messages=history) as stream:
        reply = stream.get_final_message()
    assert reply.stop_reason is not None
    assert roles(store) == ["user", "assistant"]
    assert store.stats(store.list_sessions().sessions[0].id).requests == 1


def test_a_whole_stream_the_proxy_cannot_read_passes_without_an_added_error(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # A delta type of a later API version: the proxy cannot record the reply, but the
    # stream is whole, and reaches the client as it was sent.
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": MODEL, "content": [], "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta", "x": 1}},
        {"type": "content_block_stop", "index": 0},
        *[{"type": "ping"}] * 20_000,  # far more than one read: the end comes in a later one
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]  # fmt: skip
    stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    fake_anthropic.enqueue(fake.malformed(stream, "text/event-stream"))
    body = {
        "model": MODEL,
        "max_tokens": 50,
        "stream": True,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers={"x-api-key": TEST_API_KEY})
    assert answer.content == stream
    assert roles(store) == ["user"]
