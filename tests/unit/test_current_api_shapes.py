"""Shapes today's Messages API returns or takes that earlier checks did not know: progress
updates between tool calls, the models that take `role: "system"` messages, cache
breakpoints a host set on its own blocks, and server tools across replies
(docs/current-api.md#request-rules-and-their-sources).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.anthropic.request import SYSTEM_MESSAGE_OPEN, render_request
from abridged.application.service import Sessions
from abridged.domain.capabilities import capabilities_for
from abridged.domain.messages import Message
from tests.support.anthropic_rules import assert_valid_request
from tests.support.builders import TOOLS, words

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
    "rkJggg=="
)


def start(app: Sessions, model: str = "claude-fable-5-1", tools: Any = TOOLS) -> UUID:
    return app.start_session(
        model=model,
        context_window=50_000,
        max_output_tokens=2_000,
        system="You are a careful coding agent.",
        tools=tools,
    )


def body_of(app: Sessions, session_id: UUID, **options: Any) -> dict[str, Any]:
    prepared = app.prepare_request(session_id)
    body = render_request(
        prepared.context, model=prepared.model, max_tokens=prepared.max_tokens, **options
    )
    assert_valid_request(body)
    return body


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-sonnet-5-5", "claude-haiku-5-5"])
def test_a_model_the_api_gives_no_system_messages_gets_them_as_marked_text(
    app: Sessions, model: str
) -> None:
    # "This feature is not available on Claude Sonnet 5" (build-with-claude/mid-conversation-
    # system-messages), where `role: "system"` is a 400; the 5.x Sonnet and Haiku are not on
    # the page's list either.
    assert not capabilities_for(model).system_messages
    session_id = start(app, model)
    app.append_message(session_id, Message.user("Fix the parser."))
    app.append_message(session_id, Message.system("Answer in French."))
    messages = body_of(app, session_id)["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"][-1]["text"].startswith(SYSTEM_MESSAGE_OPEN)


def document(n: int, ttl: str | None = None) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    source = {"type": "text", "media_type": "text/plain", "data": f"Document {n}. " + words(40)}
    return {"type": "document", "source": source, "cache_control": control}


def test_breakpoints_on_the_hosts_documents_do_not_add_to_the_four(app: Sessions) -> None:
    # Kept on a document, a host's breakpoints came on top of the ones abridged places: three
    # documents made five in all, a 400 ("You can define up to 4 cache breakpoints").
    session_id = start(app)
    docs = [document(1), document(2), document(3, "1h")]
    app.append_message(
        session_id, {"role": "user", "content": [*docs, {"type": "text", "text": "Compare them."}]}
    )
    body = body_of(app, session_id)
    assert all("cache_control" not in block for block in body["messages"][0]["content"][:3])
    assert app.history(session_id)  # the documents are kept, without the breakpoints


def test_a_tool_result_holding_documents_and_an_error_image_is_sent_as_it_came(
    app: Sessions,
) -> None:
    session_id = start(app)
    app.append_message(session_id, Message.user("Render it."))
    app.record_reply(
        session_id,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_r", "name": "run_command", "input": {}}],
        },
    )
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_r",
        "is_error": True,
        "content": [document(1), document(2), document(3), image],
    }
    app.append_message(session_id, {"role": "user", "content": [result]})
    sent = body_of(app, session_id)["messages"][-1]["content"][0]
    assert sent["is_error"] is True
    assert [b["type"] for b in sent["content"]] == ["document", "document", "document", "image"]


def test_a_hosts_five_minute_tool_breakpoint_keeps_ours_at_five_minutes(app: Sessions) -> None:
    # "Cache entries with longer TTL must appear before shorter TTLs": the tools come first,
    # so a one-hour breakpoint of ours after the host's five-minute one was a 400.
    tools = [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}, TOOLS[1]]
    session_id = start(app, tools=tools)
    app.append_message(session_id, Message.user("Hi"))
    body = body_of(app, session_id, ttl="1h")
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    long_tools = [{**TOOLS[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}, TOOLS[1]]
    session_id = start(app, tools=long_tools)
    app.append_message(session_id, Message.user("Hi"))
    body = body_of(app, session_id, ttl="1h")
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_a_progress_update_before_the_second_call_is_recorded_and_sent_back(
    app: Sessions,
) -> None:
    # Fable 5.1 and Opus 5.5 write a thinking block right before each tool call they
    # introduce, so a reply with parallel calls has thinking between them (build-with-claude/
    # thinking, "Progress updates between tool calls"). Such a reply was refused as misplaced.
    session_id = start(app)
    app.append_message(session_id, Message.user("Read both files."))
    reply = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "", "signature": "sig-reasoning"},
            {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}},
            {"type": "thinking", "thinking": "Now the other one.", "signature": "sig-update"},
            {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}},
        ],
    }
    app.record_reply(session_id, reply)
    app.append_message(
        session_id,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b"},
            ],
        },
    )
    assert body_of(app, session_id)["messages"][1] == reply
