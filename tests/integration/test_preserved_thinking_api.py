"""The local Messages API checks preserved thinking as the real one does, through the real
SDK: a thinking block whose prefix changed is refused with the API's 400, or dropped and
listed in `input_transformations` when the request asks for `drop_block`; and a session on
such a model, driven through the SDK, is never refused."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, words
from tests.support.fake_anthropic import FakeAnthropic, message
from tests.support.thinking_binding import PREFIX_MISMATCH

MODEL = "claude-fable-5-1"
THINKING = {"type": "adaptive"}  # Fable 5.x takes adaptive thinking only (a 400 for "enabled")


def client(fake: FakeAnthropic) -> Any:
    """The SDK's client, untyped: these requests carry fields of betas the types lack."""
    return fake.client()


def first_turn(fake: FakeAnthropic) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A request and the model's reply, its thinking signed by the API."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the CSV export."}]
    fake.enqueue(
        message(
            [
                {"type": "thinking", "thinking": "The slice drops a row.", "signature": ""},
                {"type": "text", "text": "The slice was off by one; fixed."},
            ]
        )
    )
    reply = client(fake).messages.create(
        model=MODEL, max_tokens=2048, thinking=THINKING, messages=messages
    )
    return messages, {"role": "assistant", "content": [b.model_dump() for b in reply.content]}


def test_a_thinking_block_sent_back_unchanged_passes(fake_anthropic: FakeAnthropic) -> None:
    messages, reply = first_turn(fake_anthropic)
    follow_up = [*messages, reply, {"role": "user", "content": "Thanks. Add a test."}]

    answer = client(fake_anthropic).messages.create(
        model=MODEL, max_tokens=2048, thinking=THINKING, messages=follow_up
    )

    assert answer.content
    assert fake_anthropic.violations == []


def test_a_changed_prefix_is_refused_with_the_apis_error(fake_anthropic: FakeAnthropic) -> None:
    messages, reply = first_turn(fake_anthropic)
    edited = [{"role": "user", "content": "Fix the JSON export."}, reply, messages[0]]

    with pytest.raises(anthropic.BadRequestError) as caught:
        client(fake_anthropic).messages.create(
            model=MODEL, max_tokens=2048, thinking=THINKING, messages=edited
        )

    assert caught.value.status_code == 400
    assert PREFIX_MISMATCH in str(caught.value)
    assert "messages.1.content.0" in str(caught.value)


def test_drop_block_drops_it_and_says_so(fake_anthropic: FakeAnthropic) -> None:
    messages, reply = first_turn(fake_anthropic)
    edited = [{"role": "user", "content": "Fix the JSON export."}, reply, messages[0]]

    raw = client(fake_anthropic).messages.with_raw_response.create(
        model=MODEL,
        max_tokens=2048,
        thinking={**THINKING, "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
        messages=edited,
        extra_headers={"anthropic-beta": "thinking-binding-controls-2026-08-01"},
    )

    body = raw.http_response.json()
    assert body["input_transformations"] == [
        {
            "type": "thinking_block_dropped",
            "reason": "prefix_mismatch",
            "message_index": 1,
            "block_index": 0,
        }
    ]


def test_a_compacting_session_driven_through_the_sdk_is_never_refused(
    fake_anthropic: FakeAnthropic, app: Sessions
) -> None:
    session_id = app.start_session(
        model=MODEL,
        context_window=6_000,
        max_output_tokens=2_048,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, threshold_ratio=0.3),
    )
    options = RequestOptions(thinking=THINKING)
    for turn in range(4):
        app.append_message(session_id, {"role": "user", "content": f"Task {turn}: {words(300)}"})
        for step in range(3):
            prepared = app.prepare_request(session_id)
            body = render_request(prepared.context, model=MODEL, max_tokens=2_048, options=options)
            tool_id = f"toolu_{turn}{step}"
            fake_anthropic.enqueue(
                message(
                    [
                        {"type": "thinking", "thinking": f"step {step}", "signature": ""},
                        {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {}},
                    ],
                    stop_reason="tool_use",
                )
            )
            reply = client(fake_anthropic).messages.create(**body)
            app.record_reply(session_id, reply)
            result = {"type": "tool_result", "tool_use_id": tool_id, "content": words(250)}
            app.append_message(session_id, {"role": "user", "content": [result]})
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model=MODEL, max_tokens=2_048, options=options)
        fake_anthropic.enqueue(message("Done."))
        app.record_reply(session_id, client(fake_anthropic).messages.create(**body))

    assert app.session(session_id).generation > 0
    assert fake_anthropic.violations == []
