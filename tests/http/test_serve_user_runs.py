"""Consecutive user messages, which the API joins into one turn: the proxy answers them
instead of refusing them, sends the joined turn, and carries on in the same session."""

from __future__ import annotations

from typing import Any

import anthropic

from abridged.application.service import Sessions
from tests.http.test_serve_proxy import MODEL, only_session, stored_messages
from tests.support.fake_anthropic import FakeAnthropic

CALL = {"type": "tool_use", "id": "toolu_01", "name": "run_command", "input": {"command": "ls"}}
TOOLS: list[Any] = [
    {"name": "run_command", "description": "Run it.", "input_schema": {"type": "object"}}
]


def test_consecutive_user_messages_go_upstream_as_one_turn_in_one_session(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history: list[Any] = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [CALL]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01"}]},
        {"role": "user", "content": "[Request interrupted by user for tool use]"},
        {"role": "user", "content": [{"type": "text", "text": "Only the src folder."}]},
    ]
    reply = client.messages.create(model=MODEL, max_tokens=200, tools=TOOLS, messages=history)
    history.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    history.append({"role": "user", "content": "Thanks."})
    client.messages.create(model=MODEL, max_tokens=200, tools=TOOLS, messages=history)

    assert fake_anthropic.violations == []
    sent = fake_anthropic.requests_to()[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[2]["content"]] == ["tool_result", "text", "text"]
    session_id = only_session(store)  # the second request carried on: no branch
    joined = stored_messages(store, session_id)[2]
    assert [b.get("text") for b in joined["content"][1:]] == [
        "[Request interrupted by user for tool use]",
        "Only the src folder.",
    ]
    assert len(stored_messages(store, session_id)) == 6  # both replies recorded
