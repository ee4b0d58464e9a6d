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
from tests.support.builders import TOOLS

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
