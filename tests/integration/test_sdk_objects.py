"""SDK objects in: what the real anthropic SDK returns goes straight into the service.

The SDK talks to the local fake Messages API; its `Message`, `BetaMessage`, their content
blocks and `Usage` are passed as they are, as the README shows.
"""

from __future__ import annotations

from typing import Any

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.messages import TextBlock, WireBlock
from abridged.domain.session import Session
from abridged.domain.usage import Usage
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)

MODEL = "claude-sonnet-4-6"
RESEARCH_REPLY: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me look that up."},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01",
        "name": "web_search",
        "input": {"query": "eventsourcing snapshots"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://example.com/snapshots",
                "title": "Snapshots",
                "encrypted_content": "RW5jcnlwdGVkIHBhZ2U=",
                "page_age": None,
            }
        ],
    },
    {
        "type": "text",
        "text": "Snapshots are taken every 100 events.",
        "citations": [
            {
                "type": "web_search_result_location",
                "url": "https://example.com/snapshots",
                "title": "Snapshots",
                "encrypted_index": "RW5jcnlwdGVk",
                "cited_text": "every 100 events",
            }
        ],
    },
    {"type": "tool_use", "id": "toolu_01", "name": "run_command", "input": {"command": "ls"}},
]
TOOLS = [
    {
        "name": "run_command",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]


def start(sessions: Sessions) -> Any:
    session_id = sessions.start_session(
        model=MODEL, context_window=200_000, max_output_tokens=8_192, tools=TOOLS
    )
    sessions.append_message(session_id, {"role": "user", "content": "How are snapshots taken?"})
    return session_id


def test_an_sdk_message_and_its_usage_go_straight_into_record_reply(
    fake_anthropic: FakeAnthropic,
) -> None:
    client = fake_anthropic.client()
    sessions = bootstrap()
    session_id = start(sessions)
    fake_anthropic.enqueue(
        api.message(RESEARCH_REPLY, stop_reason="tool_use", usage={"output_tokens": 42})
    )

    prepared = sessions.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    reply = client.messages.create(**body)
    sessions.record_reply(session_id, reply)  # the SDK's Message, usage and all
    sessions.append_message(
        session_id,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a\nb"}],
        },
    )
    again = sessions.prepare_request(session_id)
    client.messages.create(
        **render_request(again.context, model=again.model, max_tokens=again.max_tokens)
    )

    recorded = [e for e in sessions.history(session_id) if isinstance(e, Session.MessageAppended)]
    reply_event = recorded[1]
    assert reply_event.usage == Usage(
        input_tokens=reply.usage.input_tokens,
        output_tokens=42,
        cache_read_input_tokens=0,
        cache_creation_input_tokens=0,
    )
    assert reply_event.message.to_wire()["content"] == RESEARCH_REPLY
    assert isinstance(reply_event.message.content[1], WireBlock)
    cited = reply_event.message.content[3]
    assert isinstance(cited, TextBlock)
    assert cited.citations is not None
    assert cited.citations[0]["cited_text"] == "every 100 events"
    assert not fake_anthropic.violations
    # The second request sent the reply back as the API returned it.
    sent_back = fake_anthropic.requests_to()[-1].body["messages"][1]["content"]
    assert [{k: v for k, v in b.items() if k != "cache_control"} for b in sent_back] == (
        RESEARCH_REPLY
    )


def test_sdk_content_blocks_and_usage_objects_are_accepted_wherever_dicts_are(
    fake_anthropic: FakeAnthropic,
) -> None:
    client = fake_anthropic.client()
    sessions = bootstrap()
    session_id = start(sessions)
    fake_anthropic.enqueue(api.message(RESEARCH_REPLY, stop_reason="tool_use"))
    prepared = sessions.prepare_request(session_id)
    reply = client.beta.messages.create(
        **render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    )
    assert type(reply).__name__ == "BetaMessage"

    sessions.append_message(session_id, {"role": "assistant", "content": reply.content})

    message = sessions.session(session_id).entries[-1].message
    assert message.to_wire()["content"] == RESEARCH_REPLY
    other = start(sessions)
    sessions.prepare_request(other)
    sessions.record_reply(other, reply, usage=reply.usage)
    recorded = sessions.history(other)[-1]
    assert isinstance(recorded, Session.MessageAppended)
    assert recorded.usage is not None
    assert recorded.usage.input_tokens == reply.usage.input_tokens
